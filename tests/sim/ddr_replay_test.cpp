// Pacing of the trace player: timed pacing honours timestamps, closed pacing keeps at most the
// bound in flight, and a trace file replays like the generator it came from.

#include "engine/card/card_config.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_patterns.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

namespace {

using namespace cardsim::sim::memory;

PatternSpec sequential(std::uint64_t count, std::uint64_t gap) {
    PatternSpec s;
    s.count = count;
    s.gap_cycles = gap;
    return s;
}

} // namespace

TEST_CASE("timed pacing issues each request at its timestamp", "[ddr][replay]") {
    const auto d = cardsim::card::default_card_config().ddr;
    ReplayHarness h(d);
    const MemoryClock clock(d.speed_mts);
    const std::uint64_t n = 20000, gap = 100;
    PatternGenerator gen(sequential(n, gap), clock);
    const ReplayResult r = h.run(gen, {Pacing::Timed, 0});
    // The last request arrives at (n-1) x gap and, the memory idle, completes a few tens of cycles later.
    CHECK(r.cycles() >= (n - 1) * gap);
    CHECK(r.cycles() <= (n - 1) * gap + 1000);
    // Unloaded: a read never waits for another, so the worst latency is a refresh plus a row miss.
    const auto& t = d.timing;
    CHECK(r.player.read_latency.max() <= t.trp + t.trfc + t.trcd + t.cl + t.burst_cycles());
    CHECK(r.player.read_latency.percentile(0.5) == t.cl + t.burst_cycles()); // mostly row hits
}

TEST_CASE("closed pacing with one request in flight runs at 64 B per latency", "[ddr][replay]") {
    const auto d = cardsim::card::default_card_config().ddr;
    ReplayHarness h(d);
    PatternGenerator gen(sequential(20000, 0), MemoryClock(d.speed_mts));
    const ReplayResult r = h.run(gen, {Pacing::Closed, 1});
    const double mean = r.player.read_latency.mean();
    // Little's law with one in flight: the run lasts the sum of the latencies.
    CHECK(static_cast<double>(r.cycles()) == Approx(mean * 20000).epsilon(0.001));
    PatternGenerator wide(sequential(20000, 0), MemoryClock(d.speed_mts));
    const ReplayResult w = h.run(wide, {Pacing::Closed, 64});
    CHECK(w.cycles() * 10 < r.cycles());
}

TEST_CASE("a trace file replays exactly like the generator that wrote it", "[ddr][replay]") {
    const auto d = cardsim::card::default_card_config().ddr;
    ReplayHarness h(d);
    const MemoryClock clock(d.speed_mts);
    PatternSpec s;
    s.kind = PatternKind::Mix;
    s.count = 30000;
    s.reads = 2;
    s.writes = 1;
    const cardsim::test::ScratchDir dir("ddr-replay");
    const auto path = dir / "requests.dramsim3";
    {
        TraceWriter w(path, TraceFormat::DramSim3, {});
        PatternGenerator gen(s, clock);
        MemRequest m;
        while (gen.next(m))
            w.write(m);
        w.close();
    }
    PatternGenerator gen(s, clock);
    const ReplayResult a = h.run(gen, {Pacing::Closed, 64});
    TraceContext ctx;
    ctx.address_limit = d.total_bytes();
    TraceReader reader(path, TraceFormat::DramSim3, ctx);
    const ReplayResult b = h.run(reader, {Pacing::Closed, 64});
    CHECK(a.cycles() == b.cycles());
    CHECK(a.player.read_latency.mean() == b.player.read_latency.mean());
    for (std::size_t c = 0; c < a.channels.size(); ++c) {
        CHECK(a.channels[c].row_hits == b.channels[c].row_hits);
        CHECK(a.channels[c].turnarounds == b.channels[c].turnarounds);
    }
}
