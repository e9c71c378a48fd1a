#include "engine/fit/fit.hpp"

#include <fmt/core.h>

namespace cardsim::fit {

std::string thousands(std::uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

FitReport check_fit(const card::CardConfig& config) {
    FitReport r;
    r.table = resources(config);
    r.clock = estimate_clock(config, r.table);
    r.kernel_mhz = config.clock.kernel_mhz;
    r.peak = estimate_power(config, config.clock.kernel_mhz, peak_activity(config));
    r.board_watts = config.fit.device.board_watts;
    const auto& device = config.fit.device.name;
    auto over = [&](std::uint64_t need, std::uint64_t have, std::string_view what) {
        if (need > have)
            r.problems.push_back(fmt::format("the card needs {} {}; the {} has {}", thousands(need), what,
                                             device, thousands(have)));
    };
    over(r.table.total.dsps, r.table.device.dsps, "DSP blocks");
    over(r.table.total.alms, r.table.device.alms, "ALMs");
    over(r.table.total.m20ks, r.table.device.m20ks, "M20K blocks");
    if (config.clock.kernel_mhz > r.clock.fmax_mhz)
        r.problems.push_back(
            fmt::format("the kernel clock of {} MHz (clock.kernel_mhz) is above the estimated "
                        "Fmax of {:.0f} MHz: {}",
                        config.clock.kernel_mhz, r.clock.fmax_mhz, r.clock.limit));
    if (r.peak.total() > r.board_watts)
        r.problems.push_back(fmt::format("the card's peak power of {:.0f} W is above the board's {:.0f} W",
                                         r.peak.total(), r.board_watts));
    return r;
}

std::string verdict_line(const FitReport& r) {
    if (!r.fits())
        return fmt::format("fit: no: {}{}", r.problems.front(),
                           r.problems.size() > 1 ? fmt::format(" (and {} more)", r.problems.size() - 1) : "");
    const auto& t = r.table;
    return fmt::format("fit: yes ({} of {} DSP blocks, {} of {} ALMs, {} of {} M20K blocks; Fmax ~{:.0f} MHz "
                       "for {} MHz; peak {:.0f} W of {:.0f} W)",
                       thousands(t.total.dsps), thousands(t.device.dsps), thousands(t.total.alms),
                       thousands(t.device.alms), thousands(t.total.m20ks), thousands(t.device.m20ks),
                       r.clock.fmax_mhz, r.kernel_mhz, r.peak.total(), r.board_watts);
}

std::string describe(const FitReport& r, const std::string& device_name) {
    std::string o = fmt::format("{:<18} {:>5} {:>9} {:>9} {:>10} {:>10}\n", "unit", "count", "lanes", "DSP",
                                "ALM", "M20K");
    for (auto& row : r.table.rows)
        o += fmt::format("{:<18} {:>5} {:>9} {:>9} {:>10} {:>10}\n", row.name,
                         row.count ? std::to_string(row.count) : "-", row.lanes ? thousands(row.lanes) : "-",
                         thousands(row.resources.dsps), thousands(row.resources.alms),
                         thousands(row.resources.m20ks));
    auto pct = [](std::uint64_t a, std::uint64_t b) { return b ? 100.0 * double(a) / double(b) : 0.0; };
    const auto& t = r.table;
    o += fmt::format("{:<18} {:>5} {:>9} {:>9} {:>10} {:>10}\n", "total", "", "", thousands(t.total.dsps),
                     thousands(t.total.alms), thousands(t.total.m20ks));
    o += fmt::format("{:<18} {:>5} {:>9} {:>9} {:>10} {:>10}\n", device_name.substr(0, 18), "", "",
                     thousands(t.device.dsps), thousands(t.device.alms), thousands(t.device.m20ks));
    o += fmt::format("{:<18} {:>5} {:>9} {:>8.1f}% {:>9.1f}% {:>9.1f}%\n", "used", "", "",
                     pct(t.total.dsps, t.device.dsps), pct(t.total.alms, t.device.alms),
                     pct(t.total.m20ks, t.device.m20ks));
    o += fmt::format("clock: Fmax ~{:.0f} MHz ({}); the config runs {} MHz\n", r.clock.fmax_mhz,
                     r.clock.limit, r.kernel_mhz);
    const auto& p = r.peak;
    o += fmt::format(
        "power (peak, everything busy): {:.1f} W = static {:.1f} + shell {:.1f} + DSP {:.1f} + ALM "
        "{:.1f} + M20K {:.1f} + DDR {:.1f}; the board allows {:.0f} W\n",
        p.total(), p.static_watts, p.shell_watts, p.dsp_watts, p.alm_watts, p.m20k_watts, p.ddr_watts,
        r.board_watts);
    if (r.fits()) {
        o += "verdict: the config fits the device at its clock and power\n";
    } else {
        o += "verdict: the config does not fit:\n";
        for (auto& why : r.problems)
            o += "  " + why + "\n";
    }
    return o;
}

} // namespace cardsim::fit
