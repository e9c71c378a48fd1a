#include "cli/expert_stats.hpp"

#include "engine/kernels/formats.hpp"
#include "engine/program/slots.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>

namespace cardsim::cli {

namespace {

/// The routing entries of decode step `d`: its `micro` microbatch steps (one entry each).
std::span<const std::vector<std::vector<std::uint32_t>>>
decode_step(const std::vector<std::vector<std::vector<std::uint32_t>>>& routing, std::size_t d,
            std::size_t micro) {
    const std::size_t first = d * micro;
    return std::span(routing).subspan(first, std::min(micro, routing.size() - first));
}

/// Decode steps in `routing` of `micro` entries each.
std::size_t decode_steps(const std::vector<std::vector<std::vector<std::uint32_t>>>& routing,
                         std::size_t micro) {
    return (routing.size() + micro - 1) / micro;
}

} // namespace

std::vector<ExpertLayerStats>
expert_stats(const program::Program& p, const card::CardConfig& config,
             const std::vector<std::vector<std::vector<std::uint32_t>>>& routing, std::size_t micro) {
    std::vector<ExpertLayerStats> out;
    std::vector<std::uint64_t> per_expert; // bytes one touched expert streams, per router
    for (const auto& c : p.commands) {
        if (c.opcode == program::Opcode::Route) {
            const auto d = program::args<program::slots::Route>(c).dims;
            if (d.router >= out.size()) out.resize(d.router + 1);
            // A decode step's rows: every microbatch's.
            out[d.router] = {d.router, d.experts, d.top_k, d.rows * micro, 0, 0, 0, 0};
            out[d.router].microbatches = micro;
        } else if (c.opcode == program::Opcode::ExpertMatvec) {
            const auto d = program::args<program::slots::ExpertMatvec>(c).dims;
            if (d.router >= per_expert.size()) per_expert.resize(d.router + 1, 0);
            per_expert[d.router] += 8 + kernels::matrix_layout(config, d.n, d.k).bytes();
        }
    }
    per_expert.resize(out.size(), 0);
    for (auto& s : out) {
        std::size_t steps = 0;
        for (std::size_t d = 0; d < decode_steps(routing, micro); ++d) {
            // The step's rows over its microbatches; each microbatch streams the experts it touched.
            std::map<std::uint32_t, std::size_t> rows;
            std::size_t chosen = 0;
            double streamed = 0;
            for (const auto& group : decode_step(routing, d, micro)) {
                if (s.router >= group.size() || group[s.router].empty()) continue;
                const std::set<std::uint32_t> touched(group[s.router].begin(), group[s.router].end());
                streamed += double(touched.size() * per_expert[s.router]);
                for (auto e : group[s.router])
                    ++rows[e];
                chosen += group[s.router].size();
            }
            if (rows.empty()) continue;
            std::size_t most = 0;
            for (auto& [e, n] : rows)
                most = std::max(most, n);
            const double mean = double(chosen) / double(rows.size());
            s.distinct += double(rows.size());
            s.max_rows += double(most);
            s.imbalance += double(most) / mean;
            s.bytes += streamed;
            ++steps;
        }
        if (steps)
            for (auto* f : {&s.distinct, &s.max_rows, &s.imbalance, &s.bytes})
                *f /= double(steps);
    }
    return out;
}

ExpertCardLoad expert_card_load(std::vector<ExpertLayerStats>& stats,
                                const std::vector<const program::Program*>& programs,
                                const card::CardConfig& config,
                                const std::vector<std::vector<std::vector<std::uint32_t>>>& routing,
                                std::size_t micro) {
    struct Share {
        std::uint64_t first = 0, count = 0, bytes = 0; // experts first .. first + count, bytes one streams
    };
    std::map<std::size_t, std::map<std::size_t, Share>> shares; // router → card → share
    for (std::size_t k = 0; k < programs.size(); ++k)
        for (const auto& c : programs[k]->commands) {
            if (c.opcode != program::Opcode::ExpertMatvec) continue;
            const auto d = program::args<program::slots::ExpertMatvec>(c).dims;
            if (d.experts == d.routed) continue; // the layer's experts all on this card
            auto& s = shares[d.router][k];
            s.first = d.first;
            s.count = d.experts;
            s.bytes += 8 + kernels::matrix_layout(config, d.n, d.k).bytes();
        }
    // Per decode step: each card's expert bytes, per layer and over all its layers.
    const std::size_t steps = decode_steps(routing, micro);
    std::vector<std::vector<double>> card_bytes(steps, std::vector<double>(programs.size(), 0));
    for (auto& s : stats) {
        auto it = shares.find(s.router);
        if (it == shares.end()) continue;
        s.cards = it->second.size();
        std::size_t counted = 0;
        double busiest = 0;
        for (std::size_t d = 0; d < steps; ++d) {
            std::vector<double> mine(programs.size(), 0);
            bool any = false;
            for (const auto& group : decode_step(routing, d, micro)) {
                if (s.router >= group.size() || group[s.router].empty()) continue;
                any = true;
                for (const auto& [card, share] : it->second) {
                    std::set<std::uint32_t> held;
                    for (auto e : group[s.router])
                        if (e >= share.first && e - share.first < share.count) held.insert(e);
                    mine[card] += double(held.size() * share.bytes);
                }
            }
            if (!any) continue;
            busiest += *std::max_element(mine.begin(), mine.end());
            for (std::size_t k = 0; k < mine.size(); ++k)
                card_bytes[d][k] += mine[k];
            ++counted;
        }
        if (counted) s.busiest_card_bytes = busiest / double(counted);
    }
    // The busiest card over all the layers it holds (a pipeline's stages hold different layers).
    ExpertCardLoad load;
    std::set<std::size_t> holding;
    for (auto& [router, cards] : shares)
        for (auto& [card, share] : cards)
            holding.insert(card);
    load.cards = holding.size();
    for (auto& step : card_bytes)
        load.busiest_card_bytes += step.empty() ? 0.0 : *std::max_element(step.begin(), step.end());
    if (steps) load.busiest_card_bytes /= double(steps);
    return load;
}

std::string expert_lines(const std::vector<ExpertLayerStats>& stats) {
    if (stats.empty()) return {};
    double bytes = 0, distinct = 0;
    for (auto& s : stats) {
        bytes += s.bytes;
        distinct += s.distinct;
    }
    const auto micro = stats.front().microbatches;
    std::string o =
        fmt::format("experts: {} Moe layers, a step {:.1f} experts touched a layer on average, "
                    "{:.3f} MB of expert weights streamed (each touched expert once{})\n",
                    stats.size(), distinct / double(stats.size()), bytes / 1e6,
                    micro > 1 ? fmt::format(" in each of the step's {} microbatches that touched it", micro)
                              : std::string());
    for (auto& s : stats) {
        o += fmt::format(
            "  Moe layer {}: {:.1f} of {} experts touched by {} rows of {}; rows per touched expert: "
            "max {:.1f}, {:.2f}x the mean; {:.3f} MB a step",
            s.router, s.distinct, s.experts, s.rows, s.top_k, s.max_rows, s.imbalance, s.bytes / 1e6);
        if (s.cards > 1 && s.bytes > 0)
            o += fmt::format("; split over {} cards, the busiest {:.3f} MB ({:.2f}x an even share)", s.cards,
                             s.busiest_card_bytes / 1e6, s.busiest_card_bytes * double(s.cards) / s.bytes);
        o += "\n";
    }
    return o;
}

} // namespace cardsim::cli
