#include "engine/fit/clock.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>

namespace cardsim::fit {

double utilisation(const ResourceTable& t) {
    auto frac = [](std::uint64_t used, std::uint64_t have) {
        return have ? double(used) / double(have) : 0.0;
    };
    return std::max({frac(t.total.alms, t.device.alms), frac(t.total.dsps, t.device.dsps),
                     frac(t.total.m20ks, t.device.m20ks)});
}

ClockEstimate estimate_clock(const card::CardConfig& config, const ResourceTable& t) {
    const auto& m = config.fit.clock;
    ClockEstimate e;
    e.utilisation = utilisation(t);
    e.fmax_mhz = m.base_mhz;
    e.limit = fmt::format("{:.0f} % of the device is used, below the {:.0f} % knee", 100 * e.utilisation,
                          100 * m.knee);
    if (e.utilisation > m.knee) {
        const double slope = (m.base_mhz - m.full_mhz) / std::max(1e-9, 1.0 - m.knee);
        e.fmax_mhz = std::max(1.0, m.base_mhz - slope * (e.utilisation - m.knee));
        e.limit = fmt::format("{:.0f} % of the device is used (Fmax falls past {:.0f} %)",
                              100 * e.utilisation, 100 * m.knee);
    }
    for (auto kind : card::all_unit_kinds) {
        const auto& spec = config.units[kind];
        if (!spec.present() || !config.fit[kind].reduction) continue;
        const std::uint64_t l = std::max<std::uint64_t>(2, config.lanes(kind));
        const std::uint32_t levels = std::bit_width(l - 1); // ceil(log2(lanes))
        const std::uint32_t needed = (levels + m.levels_per_stage - 1) / m.levels_per_stage;
        if (needed <= spec.latency) continue;
        const double f = m.base_mhz * std::max<std::uint32_t>(spec.latency, 1) / needed;
        if (f < e.fmax_mhz) {
            e.fmax_mhz = f;
            e.limit =
                fmt::format("the {} unit reduces {} lanes through {} adder levels in {} pipeline stages",
                            card::name(kind), config.lanes(kind), levels, spec.latency);
        }
    }
    return e;
}

} // namespace cardsim::fit
