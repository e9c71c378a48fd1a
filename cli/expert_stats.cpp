#include "cli/expert_stats.hpp"

#include "engine/kernels/formats.hpp"
#include "engine/program/slots.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

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
    for (auto& s : stats)
        o += fmt::format(
            "  Moe layer {}: {:.1f} of {} experts touched by {} rows of {}; rows per touched expert: "
            "max {:.1f}, {:.2f}x the mean; {:.3f} MB a step\n",
            s.router, s.distinct, s.experts, s.rows, s.top_k, s.max_rows, s.imbalance, s.bytes / 1e6);
    return o;
}

} // namespace cardsim::cli
