#include "engine/fit/power.hpp"

#include <algorithm>

namespace cardsim::fit {

Activity peak_activity(const card::CardConfig& config) {
    Activity a;
    a.busy.fill(1.0);
    a.arena = 1.0;
    // A channel reads no faster than its user port takes the data (`ddr.port_bits` at the kernel
    // clock), as the simulator times it.
    const double port = config.ddr.port_bits / 8.0 * config.clock.kernel_mhz * 1e6;
    a.ddr_read_bytes_per_second =
        config.ddr.channels * std::min(config.ddr.channel_peak_bytes_per_second(), port);
    return a;
}

PowerEstimate estimate_power(const card::CardConfig& config, double clock_mhz, const Activity& activity) {
    const auto& p = config.fit.power;
    PowerEstimate e;
    e.static_watts = p.static_watts;
    e.shell_watts = p.shell_watts;
    for (auto kind : card::all_unit_kinds) {
        const auto& spec = config.units[kind];
        if (!spec.present()) continue;
        const auto r = unit_resources(config, kind);
        const double busy = activity.busy[static_cast<std::size_t>(kind)] * spec.count;
        e.dsp_watts += busy * double(r.dsps) * p.dsp_uw_per_mhz * clock_mhz * 1e-6;
        e.alm_watts += busy * double(r.alms) / 1000.0 * p.alm_uw_per_mhz * clock_mhz * 1e-6;
        e.m20k_watts += busy * double(r.m20ks) * p.m20k_uw_per_mhz * clock_mhz * 1e-6;
    }
    e.m20k_watts += activity.arena * double(arena_m20ks(config)) * p.m20k_uw_per_mhz * clock_mhz * 1e-6;
    e.ddr_watts = config.ddr.channels * p.ddr_background_watts +
                  activity.ddr_read_bytes_per_second * p.ddr_read_pj_per_byte * 1e-12 +
                  activity.ddr_write_bytes_per_second * p.ddr_write_pj_per_byte * 1e-12;
    return e;
}

} // namespace cardsim::fit
