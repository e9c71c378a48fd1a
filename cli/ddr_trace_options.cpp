#include "cli/ddr_trace_options.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

namespace cardsim::cli {

namespace po = boost::program_options;
namespace mem = cardsim::sim::memory;

po::options_description ddr_trace_options() {
    po::options_description o("DDR trace export");
    o.add_options()("ddr-trace", po::value<std::string>()->value_name("FILE"),
                    "write every request sent to the DDR, at the memory cycle it arrives, split into "
                    "--ddr-trace-bytes requests, as a trace other DRAM simulators read")(
        "ddr-trace-format", po::value<std::string>()->default_value("cardsim"),
        "cardsim | dramsim3 | dramsys")(
        "ddr-trace-channel", po::value<std::string>()->default_value("all"),
        "all: every channel at card addresses (the channel bits where the interleave puts them); N: "
        "channel N only, at its local addresses")(
        "ddr-trace-bytes", po::value<std::uint32_t>()->value_name("B"),
        "split requests at multiples of B bytes (default: one burst of the card's DDR, 64)");
    return o;
}

std::optional<DdrTraceRequest> ddr_trace_request(const po::variables_map& vm, const card::CardConfig& card) {
    if (!vm.count("ddr-trace")) {
        for (const char* o : {"ddr-trace-format", "ddr-trace-channel", "ddr-trace-bytes"})
            if (vm.count(o) && !vm[o].defaulted())
                throw Error(fmt::format("--{} without --ddr-trace FILE: say where the trace goes", o));
        return std::nullopt;
    }
    DdrTraceRequest r;
    r.path = vm["ddr-trace"].as<std::string>();
    const std::string format = vm["ddr-trace-format"].as<std::string>();
    auto f = mem::parse_trace_format(format);
    if (!f) throw Error(fmt::format("--ddr-trace-format {}: expected cardsim, dramsim3 or dramsys", format));
    r.spec.format = *f;
    const std::string channel = vm["ddr-trace-channel"].as<std::string>();
    if (channel != "all") {
        std::uint32_t c = 0;
        auto [p, ec] = std::from_chars(channel.data(), channel.data() + channel.size(), c);
        if (channel.empty() || ec != std::errc{} || p != channel.data() + channel.size() ||
            c >= card.ddr.channels)
            throw Error(fmt::format("--ddr-trace-channel {}: expected all or a channel 0 to {}", channel,
                                    card.ddr.channels - 1));
        r.spec.channel = c;
    }
    r.spec.request_bytes =
        vm.count("ddr-trace-bytes") ? vm["ddr-trace-bytes"].as<std::uint32_t>() : card.ddr.burst_bytes();
    if (r.spec.request_bytes == 0) throw Error("--ddr-trace-bytes 0: expected at least 1 byte");
    return r;
}

mem::TraceContext trace_context(const card::CardConfig& card, std::uint32_t player_mhz) {
    mem::TraceContext ctx;
    ctx.memory_mts = card.ddr.speed_mts;
    ctx.player_mhz = player_mhz ? player_mhz : card.ddr.speed_mts / 2;
    ctx.request_bytes = card.ddr.burst_bytes();
    ctx.address_limit = card.ddr.total_bytes();
    return ctx;
}

std::string ddr_trace_text(const mem::TraceExporter& exporter, const card::DdrConfig& ddr,
                           std::span<const mem::ChannelStats> channels) {
    const auto& spec = exporter.spec();
    std::uint64_t end = 0, hits = 0, misses = 0, conflicts = 0;
    for (std::uint32_t c = 0; c < channels.size(); ++c) {
        if (spec.channel && *spec.channel != c) continue;
        end = std::max(end, channels[c].last_data);
        hits += channels[c].row_hits;
        misses += channels[c].row_misses;
        conflicts += channels[c].row_conflicts;
    }
    const std::string which = spec.channel ? fmt::format("channel {} at its local addresses", *spec.channel)
                                           : std::string("all channels at card addresses");
    return fmt::format(
        "ddr trace: {} ({}), {} requests of {} B, {} bytes, {}\n"
        "  address bits: {}\n"
        "  DDR time {} memory cycles (to the last data beat, write queues drained), row hits {} misses {} "
        "conflicts {}\n",
        exporter.path().string(), mem::name(spec.format), exporter.requests(), spec.request_bytes,
        exporter.bytes(), which, mem::describe_address_bits(ddr, !spec.channel), end, hits, misses,
        conflicts);
}

} // namespace cardsim::cli
