// Timing validation of the DDR4 model on the standard patterns, driven through the same TLM path
// as the card (TracePlayer -> DdrMemory -> DdrChannel), closed pacing, 64 outstanding, default
// config. Expectations and their sources: sim/memory/README.md. Each case prints its figures
// (`ctest -V`); each runs in its own process.

#include "engine/card/card_config.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/trace_patterns.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

namespace {

using namespace cardsim::sim::memory;

struct Figures {
    double total_gbps;
    double min_channel_fraction;
    double max_channel_fraction;
    double mean_latency_ns;
    ReplayResult result;
};

/// The default card with `sets` applied.
cardsim::card::CardConfig card(std::initializer_list<const char*> sets = {}) {
    std::vector<cardsim::card::Override> o;
    for (auto s : sets)
        o.push_back(cardsim::card::parse_override(s));
    return cardsim::card::load_card_config({}, o);
}

/// Replays `spec` on `h` (closed pacing, 64 outstanding) and prints the figures.
Figures run(ReplayHarness& h, const char* label, PatternSpec spec) {
    const auto& ddr = h.config();
    PatternGenerator gen(spec, MemoryClock(ddr.speed_mts));
    ReplayResult r = h.run(gen, {Pacing::Closed, 64});
    Figures f{total_bandwidth(r, ddr) / 1e9, 1.0, 0.0,
              MemoryClock(ddr.speed_mts).ns(r.player.read_latency.mean()), r};
    for (std::uint32_t c = 0; c < ddr.channels; ++c) {
        const double frac = channel_bandwidth(r, ddr, c) / ddr.channel_peak_bytes_per_second();
        f.min_channel_fraction = std::min(f.min_channel_fraction, frac);
        f.max_channel_fraction = std::max(f.max_channel_fraction, frac);
    }
    std::uint64_t hits = 0, bursts = 0, turns = 0;
    for (const auto& c : r.channels) {
        hits += c.row_hits;
        bursts += c.bursts();
        turns += c.turnarounds;
    }
    fmt::print(
        "{:<48} {:6.2f} GB/s total, {:5.1f} % .. {:5.1f} % of a channel's peak, read latency {:6.1f} ns, "
        "row hits {:5.1f} %, turnarounds {}\n",
        label, f.total_gbps, 100 * f.min_channel_fraction, 100 * f.max_channel_fraction, f.mean_latency_ns,
        bursts ? 100.0 * static_cast<double>(hits) / static_cast<double>(bursts) : 0.0, turns);
    return f;
}

PatternSpec spec(PatternKind kind, std::uint64_t count = 200000) {
    PatternSpec s;
    s.kind = kind;
    s.count = count;
    return s;
}

} // namespace

TEST_CASE("sequential 64 B reads reach 90 to 97 percent of every channel's peak", "[ddr][validation]") {
    ReplayHarness h(card().ddr);
    const Figures f = run(h, "sequential reads", spec(PatternKind::Sequential));
    CHECK(f.min_channel_fraction >= 0.90);
    CHECK(f.max_channel_fraction <= 0.97);
    CHECK(f.mean_latency_ns < 100);
}

TEST_CASE("sequential reads kept in one bank group are held to tCCD_S / tCCD_L of the peak",
          "[ddr][validation]") {
    const auto c = card({"ddr.controller.address_map=row:bank:bankgroup:column"});
    const double bound = static_cast<double>(c.ddr.timing.tccd_s) / c.ddr.timing.tccd_l;
    ReplayHarness h(c.ddr);
    const Figures f =
        run(h, "sequential reads, map row:bank:bankgroup:column", spec(PatternKind::Sequential));
    CHECK(f.max_channel_fraction <= bound);
    CHECK(f.min_channel_fraction >= bound * 0.9);
}

// The two cases below hold the in-order model (FCFS); FR-FCFS's bounds on the same patterns are
// in ddr_scheduler_test.cpp.
TEST_CASE("random 64 B reads fall far below the peak in arrival order", "[ddr][validation]") {
    ReplayHarness h(card({"ddr.controller.scheduler=fcfs"}).ddr);
    const Figures seq = run(h, "sequential reads", spec(PatternKind::Sequential, 50000));
    const Figures f = run(h, "random 64 B reads over 1 GiB", spec(PatternKind::Random));
    CHECK(f.max_channel_fraction < 0.5);
    CHECK(f.total_gbps < 0.5 * seq.total_gbps);
    CHECK(f.mean_latency_ns > seq.mean_latency_ns);
}

TEST_CASE(
    "four interleaved streams in arrival order: in their own channels and banks near sequential, in one "
    "bank row-bound",
    "[ddr][validation]") {
    ReplayHarness h(card({"ddr.controller.scheduler=fcfs"}).ddr);
    PatternSpec own = spec(PatternKind::Streams);
    own.spacing = (256ull << 20) + (129ull << 10); // each stream on its own channel and banks
    const Figures apart = run(h, "4 streams, bases 256 MiB + 129 KiB apart", own);
    PatternSpec rows = spec(PatternKind::Streams);
    rows.spacing = (256ull << 20) + 1024; // own channel, but the same banks as the stream before
    const Figures turns = run(h, "4 streams, bases 256 MiB + 1 KiB apart", rows);
    PatternSpec banks = spec(PatternKind::Streams);
    banks.spacing = (256ull << 20) + (128ull << 10); // same channel at a time, other banks
    const Figures shared = run(h, "4 streams, bases 256 MiB + 128 KiB apart", banks);
    const Figures clash = run(h, "4 streams, bases 256 MiB apart", spec(PatternKind::Streams)); // other rows
    CHECK(apart.min_channel_fraction >= 0.90);
    CHECK(turns.max_channel_fraction < apart.min_channel_fraction);
    // All four streams in one channel at a time: the 64 requests in flight cover one channel.
    CHECK(shared.max_channel_fraction < 0.6 * apart.min_channel_fraction);
    std::uint64_t hits = 0, conflicts = 0, bursts = 0;
    for (const auto& c : shared.result.channels) {
        hits += c.row_hits;
        bursts += c.bursts();
    }
    CHECK(static_cast<double>(hits) >= 0.95 * static_cast<double>(bursts));
    for (const auto& c : clash.result.channels)
        conflicts += c.row_conflicts;
    CHECK(conflicts > clash.result.player.requests / 2); // same bank, other rows: a conflict each
    CHECK(clash.total_gbps < 0.5 * shared.total_gbps);
}

TEST_CASE("a 2:1 read/write mix loses bandwidth to bus turnaround", "[ddr][validation]") {
    ReplayHarness h(card().ddr);
    ReplayHarness unqueued(card({"ddr.controller.write_queue=0"}).ddr, "unqueued");
    const Figures reads = run(h, "sequential reads", spec(PatternKind::Sequential));
    PatternSpec two_to_one = spec(PatternKind::Mix);
    two_to_one.reads = 2;
    two_to_one.writes = 1;
    const Figures mix = run(h, "2:1 read/write mix (two sequential streams)", two_to_one);
    std::uint64_t turns = 0;
    for (const auto& c : mix.result.channels)
        turns += c.turnarounds;
    CHECK(turns > 0);
    CHECK(mix.total_gbps < reads.total_gbps);
    CHECK(mix.min_channel_fraction >= 0.70); // writes batched by the write queue, not one turn each
    // Without a write queue every write turns the bus around twice: far lower.
    const Figures unbatched = run(unqueued, "2:1 mix without a write queue", two_to_one);
    CHECK(unbatched.total_gbps < 0.8 * mix.total_gbps);
}

TEST_CASE("sequential writes stream near the peak", "[ddr][validation]") {
    PatternSpec s = spec(PatternKind::Sequential);
    s.reads = 0;
    s.writes = 1;
    ReplayHarness h(card().ddr);
    const Figures f = run(h, "sequential writes", s);
    CHECK(f.min_channel_fraction >= 0.85);
    CHECK(f.max_channel_fraction <= 0.97);
}
