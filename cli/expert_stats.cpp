#include "cli/expert_stats.hpp"

#include "engine/kernels/formats.hpp"
#include "engine/program/slots.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

namespace cardsim::cli {

std::vector<ExpertLayerStats>
expert_stats(const program::Program& p, const card::CardConfig& config,
             const std::vector<std::vector<std::vector<std::uint32_t>>>& routing) {
    std::vector<ExpertLayerStats> out;
    std::vector<std::uint64_t> per_expert; // bytes one touched expert streams, per router
    for (const auto& c : p.commands) {
        if (c.opcode == program::Opcode::Route) {
            const auto d = program::args<program::slots::Route>(c).dims;
            if (d.router >= out.size()) out.resize(d.router + 1);
            out[d.router] = {d.router, d.experts, d.top_k, d.rows, 0, 0, 0, 0};
        } else if (c.opcode == program::Opcode::ExpertMatvec) {
            const auto d = program::args<program::slots::ExpertMatvec>(c).dims;
            if (d.router >= per_expert.size()) per_expert.resize(d.router + 1, 0);
            per_expert[d.router] += 8 + kernels::matrix_layout(config, d.n, d.k).bytes();
        }
    }
    per_expert.resize(out.size(), 0);
    for (auto& s : out) {
        std::size_t steps = 0;
        for (const auto& step : routing) {
            if (s.router >= step.size() || step[s.router].empty()) continue;
            std::map<std::uint32_t, std::size_t> rows;
            for (auto e : step[s.router])
                ++rows[e];
            std::size_t most = 0;
            for (auto& [e, n] : rows)
                most = std::max(most, n);
            const double mean = double(step[s.router].size()) / double(rows.size());
            s.distinct += double(rows.size());
            s.max_rows += double(most);
            s.imbalance += double(most) / mean;
            s.bytes += double(rows.size() * per_expert[s.router]);
            ++steps;
        }
        if (steps)
            for (auto* f : {&s.distinct, &s.max_rows, &s.imbalance, &s.bytes})
                *f /= double(steps);
    }
    return out;
}

void expert_card_load(std::vector<ExpertLayerStats>& stats,
                      const std::vector<const program::Program*>& programs, const card::CardConfig& config,
                      const std::vector<std::vector<std::vector<std::uint32_t>>>& routing) {
    struct Share {
        std::uint64_t first = 0, count = 0, bytes = 0; // experts first .. first + count, bytes one streams
    };
    std::map<std::size_t, std::map<const program::Program*, Share>> shares; // router → card → share
    for (const auto* p : programs)
        for (const auto& c : p->commands) {
            if (c.opcode != program::Opcode::ExpertMatvec) continue;
            const auto d = program::args<program::slots::ExpertMatvec>(c).dims;
            if (d.experts == d.routed) continue; // the layer's experts all on this card
            auto& s = shares[d.router][p];
            s.first = d.first;
            s.count = d.experts;
            s.bytes += 8 + kernels::matrix_layout(config, d.n, d.k).bytes();
        }
    for (auto& s : stats) {
        auto it = shares.find(s.router);
        if (it == shares.end()) continue;
        s.cards = it->second.size();
        std::size_t steps = 0;
        double busiest = 0;
        for (const auto& step : routing) {
            if (s.router >= step.size() || step[s.router].empty()) continue;
            double most = 0;
            for (const auto& [card, share] : it->second) {
                std::set<std::uint32_t> mine;
                for (auto e : step[s.router])
                    if (e >= share.first && e - share.first < share.count) mine.insert(e);
                most = std::max(most, double(mine.size() * share.bytes));
            }
            busiest += most;
            ++steps;
        }
        if (steps) s.busiest_card_bytes = busiest / double(steps);
    }
}

std::string expert_lines(const std::vector<ExpertLayerStats>& stats) {
    if (stats.empty()) return {};
    double bytes = 0, distinct = 0;
    for (auto& s : stats) {
        bytes += s.bytes;
        distinct += s.distinct;
    }
    std::string o = fmt::format("experts: {} Moe layers, a step {:.1f} experts touched a layer on average, "
                                "{:.3f} MB of expert weights streamed (each touched expert once)\n",
                                stats.size(), distinct / double(stats.size()), bytes / 1e6);
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
