#include "cli/phase.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

namespace cardsim::cli {

std::string Phase::bound_text() const {
    return fmt::format(
        "{}-bound (DDR roofline {:.3f} ms, {:.1f} % of it achieved; busiest unit {} {:.3f} ms{})", bound(),
        roofline_seconds * 1e3, seconds > 0 ? 100 * roofline_seconds / seconds : 0.0, busiest,
        compute_seconds * 1e3,
        link_seconds > 0 ? fmt::format("; busiest link {:.3f} ms", link_seconds * 1e3) : "");
}

double busiest_link_seconds(const sim::system::SystemResult& system) {
    double most = 0;
    for (const auto& l : system.links)
        most = std::max(most, l.busy_seconds);
    return most;
}

std::string Phase::encode() const {
    return fmt::format(
        "tokens={}\nsteps={}\ncycles={}\nseconds={:.17g}\nddr_bytes={}\nroofline_seconds={:.17g}\n"
        "compute_seconds={:.17g}\nbusiest={}\nhost_seconds={:.17g}\nlink_seconds={:.17g}\n",
        tokens, steps, cycles, seconds, ddr_bytes, roofline_seconds, compute_seconds, busiest, host_seconds,
        link_seconds);
}

Phase parse_phase(const std::string& text) {
    Phase p;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        auto k = line.substr(0, eq), v = line.substr(eq + 1);
        if (k == "tokens") p.tokens = std::stoull(v);
        if (k == "steps") p.steps = std::stoull(v);
        if (k == "cycles") p.cycles = std::stoull(v);
        if (k == "seconds") p.seconds = std::stod(v);
        if (k == "ddr_bytes") p.ddr_bytes = std::stoull(v);
        if (k == "roofline_seconds") p.roofline_seconds = std::stod(v);
        if (k == "compute_seconds") p.compute_seconds = std::stod(v);
        if (k == "busiest") p.busiest = v;
        if (k == "host_seconds") p.host_seconds = std::stod(v);
        if (k == "link_seconds") p.link_seconds = std::stod(v);
    }
    return p;
}

DdrTraffic ddr_traffic(const sim::RunResult& run) {
    DdrTraffic t;
    for (const auto& ch : run.channels) {
        t.read += ch.read_bytes;
        t.write += ch.write_bytes;
    }
    return t;
}

Phase phase_of(const sim::RunResult& run, const card::CardConfig& config, std::size_t tokens,
               double link_seconds) {
    Phase p;
    p.link_seconds = link_seconds;
    p.tokens = tokens;
    p.steps = run.step_end.size();
    p.cycles = run.cycles;
    p.seconds = run.seconds;
    p.host_seconds = run.host_seconds;
    const DdrTraffic traffic = ddr_traffic(run);
    p.ddr_bytes = traffic.total();
    // Each card's compute cycles by unit kind (a system's records carry their card).
    std::vector<std::array<std::uint64_t, card::unit_kind_count>> compute(1);
    for (auto& r : run.records) {
        if (r.card >= compute.size()) compute.resize(r.card + 1);
        compute[r.card][static_cast<std::size_t>(r.unit)] += r.compute_cycles;
    }
    // Every channel the run had (a system's: every card's) at its peak (or its ports').
    const auto channels = run.channels.empty() ? config.ddr.channels : run.channels.size();
    p.roofline_seconds =
        config.ddr_bound_seconds(double(traffic.read), double(traffic.write), double(channels));
    const double cycle = 1e-6 / config.clock.kernel_mhz;
    for (auto& card : compute)
        for (auto kind : card::all_unit_kinds) {
            const auto count = config.units[kind].count;
            if (!count) continue;
            const double s = double(card[static_cast<std::size_t>(kind)]) * cycle / count;
            if (!p.busiest.empty() && s <= p.compute_seconds) continue;
            p.compute_seconds = s;
            p.busiest = std::string(card::name(kind));
        }
    return p;
}

} // namespace cardsim::cli
