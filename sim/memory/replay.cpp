#include "sim/memory/replay.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace cardsim::sim::memory {

ReplayHarness::ReplayHarness(const card::DdrConfig& ddr, const std::string& name)
    : ddr_(ddr), memory_(std::make_unique<DdrMemory>(name.c_str(), ddr, 0)), // timing only: no data
      player_(std::make_unique<TracePlayer>((name + "_player").c_str(), MemoryClock(ddr.speed_mts))) {
    player_->socket.bind(memory_->socket);
    player_->attach(*memory_);
}

ReplayHarness::~ReplayHarness() = default;

ReplayResult ReplayHarness::run(RequestSource& source, PlayerOptions options) {
    const TimeBase time(MemoryClock(ddr_.speed_mts));
    memory_->reset(time.cycle_at_or_after(sc_core::sc_time_stamp()));
    player_->arm(source, options);
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    sc_core::sc_start();
    const std::clock_t c1 = std::clock();
    ReplayResult result;
    result.end = std::max(player_->totals().end, memory_->flush());
    result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    result.host_cpu_seconds = static_cast<double>(c1 - c0) / CLOCKS_PER_SEC;
    if (auto e = player_->source_error()) std::rethrow_exception(e);
    if (const auto& f = player_->failure()) {
        tlm::tlm_generic_payload gp;
        gp.set_command(f->first.direction == Direction::Read ? tlm::TLM_READ_COMMAND
                                                             : tlm::TLM_WRITE_COMMAND);
        gp.set_address(f->first.address);
        gp.set_data_length(f->first.length);
        gp.set_response_status(f->second);
        throw Error(fmt::format("request {} of the trace: {}", player_->totals().requests + 1,
                                memory_->describe_error(gp)));
    }
    result.player = player_->totals();
    for (std::uint32_t c = 0; c < memory_->channels(); ++c)
        result.channels.push_back(memory_->channel(c).timing().stats());
    return result;
}

double channel_bandwidth(const ReplayResult& r, const card::DdrConfig& ddr, std::uint32_t c) {
    const double seconds = MemoryClock(ddr.speed_mts).seconds(static_cast<double>(r.cycles()));
    return seconds > 0 ? static_cast<double>(r.channels[c].bytes()) / seconds : 0.0;
}

double total_bandwidth(const ReplayResult& r, const card::DdrConfig& ddr) {
    double sum = 0;
    for (std::uint32_t c = 0; c < r.channels.size(); ++c)
        sum += channel_bandwidth(r, ddr, c);
    return sum;
}

std::string format_summary(const ReplayResult& r, const card::DdrConfig& ddr) {
    const MemoryClock clock(ddr.speed_mts);
    const double peak = ddr.channel_peak_bytes_per_second();
    const double seconds = clock.seconds(static_cast<double>(r.cycles()));
    std::string s;
    auto out = std::back_inserter(s);
    const auto& p = r.player;
    fmt::format_to(out, "requests        {} ({} reads, {} writes)\n", p.requests, p.reads, p.writes);
    fmt::format_to(out, "bytes           {} read, {} written\n", p.read_bytes, p.write_bytes);
    fmt::format_to(out, "simulated time  {:.3f} us ({} memory cycles at {:.0f} MHz)\n", seconds * 1e6,
                   r.cycles(), clock.mhz());
    fmt::format_to(out, "bandwidth       {:>7} {:>8} {:>7} {:>10} {:>10} {:>10} {:>8}\n", "channel", "GB/s",
                   "% peak", "row hits", "misses", "conflicts", "refresh");
    std::uint64_t hits = 0, misses = 0, conflicts = 0, refresh = 0;
    for (std::uint32_t c = 0; c < r.channels.size(); ++c) {
        const auto& ch = r.channels[c];
        const double bw = channel_bandwidth(r, ddr, c);
        const double share =
            r.cycles() ? 100.0 * static_cast<double>(ch.refresh_cycles) / static_cast<double>(r.cycles())
                       : 0.0;
        fmt::format_to(out, "                {:>7} {:>8.2f} {:>6.1f}% {:>10} {:>10} {:>10} {:>7.1f}%\n", c,
                       bw / 1e9, 100.0 * bw / peak, ch.row_hits, ch.row_misses, ch.row_conflicts, share);
        hits += ch.row_hits;
        misses += ch.row_misses;
        conflicts += ch.row_conflicts;
        refresh += ch.refresh_cycles;
    }
    const double total = total_bandwidth(r, ddr);
    const double total_peak = peak * static_cast<double>(r.channels.size());
    fmt::format_to(out, "                {:>7} {:>8.2f} {:>6.1f}%\n", "total", total / 1e9,
                   100.0 * total / total_peak);
    const auto& lat = p.read_latency;
    fmt::format_to(out, "read latency    mean {:.1f} ns, p50 {:.1f} ns, p99 {:.1f} ns, max {:.1f} ns\n",
                   clock.ns(lat.mean()), clock.ns(static_cast<double>(lat.percentile(0.5))),
                   clock.ns(static_cast<double>(lat.percentile(0.99))),
                   clock.ns(static_cast<double>(lat.max())));
    const double bursts = static_cast<double>(hits + misses + conflicts);
    auto pct = [&](std::uint64_t v) { return bursts > 0 ? 100.0 * static_cast<double>(v) / bursts : 0.0; };
    fmt::format_to(out, "row buffer      {} hits ({:.1f}%), {} misses ({:.1f}%), {} conflicts ({:.1f}%)\n",
                   hits, pct(hits), misses, pct(misses), conflicts, pct(conflicts));
    const double refresh_share =
        r.cycles() && !r.channels.empty()
            ? 100.0 * static_cast<double>(refresh) /
                  (static_cast<double>(r.cycles()) * static_cast<double>(r.channels.size()))
            : 0.0;
    fmt::format_to(out, "refresh         {:.1f}% of the time\n", refresh_share);
    // Where the requests' time went, per request (a request split over channels counts per part).
    StallSplit reads, writes;
    std::uint64_t read_parts = 0, write_parts = 0, batches = 0, switches = 0;
    std::uint32_t passed = 0;
    for (const auto& ch : r.channels) {
        reads += ch.read_stalls;
        writes += ch.write_stalls;
        read_parts += ch.read_requests;
        write_parts += ch.write_requests;
        batches += ch.write_batches;
        switches += ch.rank_switches;
        passed = std::max(passed, ch.max_passed);
    }
    auto split = [&](const char* what, const StallSplit& sum, std::uint64_t n) {
        if (n == 0) return;
        const double total = static_cast<double>(sum.total());
        auto part = [&](Cycle c) {
            return fmt::format("{:.1f} ns ({:.0f}%)",
                               clock.ns(static_cast<double>(c) / static_cast<double>(n)),
                               total > 0 ? 100.0 * static_cast<double>(c) / total : 0.0);
        };
        fmt::format_to(
            out, "{:<15} queueing {}, bank {}, refresh {}, turnaround {}, data {} (mean per request)\n", what,
            part(sum.queueing), part(sum.bank), part(sum.refresh), part(sum.turnaround), part(sum.data));
    };
    split("read stalls", reads, read_parts);
    split("write stalls", writes, write_parts);
    fmt::format_to(
        out, "scheduler       {} write batches, {} rank switches, a request passed over {} times at most\n",
        batches, switches, passed);
    auto rate = [&](double sec) { return sec > 0 ? static_cast<double>(p.requests) / sec / 1e6 : 0.0; };
    fmt::format_to(
        out,
        "host            {:.3f} s, {:.2f} M requests per host second ({:.3f} s of CPU, {:.2f} M per "
        "CPU second)\n",
        r.host_seconds, rate(r.host_seconds), r.host_cpu_seconds, rate(r.host_cpu_seconds));
    return s;
}

} // namespace cardsim::sim::memory
