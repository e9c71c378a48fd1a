// Replay speed of the DDR4 model: memory requests simulated per host second, through the same
// path `cardsim ddr replay` uses (player -> DdrMemory's queued port -> ChannelController ->
// timing core), closed pacing with 64 outstanding, one core, for every standard pattern under
// each scheduler (FR-FCFS, the default, and FCFS). Targets: >= 10 M requests per host second for
// sequential traffic, as fast with FR-FCFS as with FCFS; >= 5 M for every pattern with FR-FCFS
// (issue 30). FR-FCFS also runs with exhaustive ranking (`...Exhaustive`: every bank's pick planned
// afresh at every decision, the ranking before issue 30; the same cycles). Also: the blocking TLM
// path the card's units use, trace files, and the timing core alone on a weight stream.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_timing.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_patterns.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

namespace {

namespace mem = cardsim::sim::memory;
using cardsim::card::SchedulerKind;

constexpr std::uint64_t requests = 1 << 20;

/// The default card with scheduler `kind`.
const cardsim::card::CardConfig& card(SchedulerKind kind = SchedulerKind::FrFcfs) {
    static const auto make = [](const char* name) {
        const std::vector<cardsim::card::Override> set{{"ddr.controller.scheduler", name}};
        return cardsim::card::load_card_config({}, set);
    };
    static const cardsim::card::CardConfig frfcfs = make("frfcfs"), fcfs = make("fcfs");
    return kind == SchedulerKind::Fcfs ? fcfs : frfcfs;
}

/// The process's harness for scheduler `kind` (SystemC elaborates once: both are built before
/// the first run).
mem::ReplayHarness& harness(SchedulerKind kind) {
    static const bool quiet = [] { return setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1) == 0; }();
    (void)quiet;
    static mem::ReplayHarness frfcfs(card(SchedulerKind::FrFcfs).ddr, "ddr_frfcfs");
    static mem::ReplayHarness fcfs(card(SchedulerKind::Fcfs).ddr, "ddr_fcfs");
    return kind == SchedulerKind::Fcfs ? fcfs : frfcfs;
}

/// The standard patterns of sim/memory/README.md: 64 B requests over 1 GiB from address 0.
mem::PatternSpec pattern(mem::PatternKind kind) {
    mem::PatternSpec spec;
    spec.kind = kind;
    spec.count = requests;
    spec.span = 1ull << 30;
    if (kind == mem::PatternKind::Mix) {
        spec.reads = 2;
        spec.writes = 1;
    }
    return spec;
}

void replay_pattern(benchmark::State& state, mem::PatternKind kind, SchedulerKind scheduler,
                    bool blocking = false, bool exhaustive = false) {
    mem::ReplayHarness& h = harness(scheduler);
    for (std::uint32_t c = 0; c < h.memory().channels(); ++c)
        h.memory().channel(c).controller().set_exhaustive_ranking(exhaustive);
    double bandwidth = 0;
    for (auto _ : state) {
        mem::PatternGenerator gen(pattern(kind), mem::MemoryClock(card().ddr.speed_mts));
        const mem::ReplayResult r = h.run(gen, {mem::Pacing::Closed, 64, blocking});
        bandwidth = mem::total_bandwidth(r, card().ddr);
        benchmark::DoNotOptimize(r.end);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * requests));
    state.counters["sim_GBps"] = bandwidth / 1e9;
}

#define CARDSIM_PATTERN_BENCH(Name, Kind)                                                                    \
    void BM_Replay##Name##FrFcfs(benchmark::State& state) {                                                  \
        replay_pattern(state, mem::PatternKind::Kind, SchedulerKind::FrFcfs);                                \
    }                                                                                                        \
    void BM_Replay##Name##Fcfs(benchmark::State& state) {                                                    \
        replay_pattern(state, mem::PatternKind::Kind, SchedulerKind::Fcfs);                                  \
    }                                                                                                        \
    void BM_Replay##Name##FrFcfsExhaustive(benchmark::State& state) {                                        \
        replay_pattern(state, mem::PatternKind::Kind, SchedulerKind::FrFcfs, false, true);                   \
    }                                                                                                        \
    BENCHMARK(BM_Replay##Name##FrFcfs)->Unit(benchmark::kMillisecond);                                       \
    BENCHMARK(BM_Replay##Name##FrFcfsExhaustive)->Unit(benchmark::kMillisecond);                             \
    BENCHMARK(BM_Replay##Name##Fcfs)->Unit(benchmark::kMillisecond);

CARDSIM_PATTERN_BENCH(Sequential, Sequential)
CARDSIM_PATTERN_BENCH(Random, Random)
CARDSIM_PATTERN_BENCH(Streams, Streams)
CARDSIM_PATTERN_BENCH(Mix, Mix)

/// Sequential reads issued as the card's units issue them: blocking b_transport.
void BM_ReplaySequentialBlockingFrFcfs(benchmark::State& state) {
    replay_pattern(state, mem::PatternKind::Sequential, SchedulerKind::FrFcfs, true);
}
BENCHMARK(BM_ReplaySequentialBlockingFrFcfs)->Unit(benchmark::kMillisecond);

/// A trace file of the sequential pattern in `format`, written once.
std::filesystem::path trace_file(mem::TraceFormat format) {
    const auto path =
        std::filesystem::temp_directory_path() /
        ("cardsim_bench_ddr_" + std::to_string(getpid()) + "." + std::string(mem::name(format)));
    if (!std::filesystem::exists(path)) {
        mem::TraceContext ctx;
        mem::TraceWriter w(path, format, ctx);
        mem::PatternGenerator gen(pattern(mem::PatternKind::Sequential),
                                  mem::MemoryClock(card().ddr.speed_mts));
        mem::MemRequest r;
        while (gen.next(r))
            w.write(r);
        w.close();
    }
    return path;
}

void replay_file(benchmark::State& state, mem::TraceFormat format) {
    const auto path = trace_file(format);
    mem::ReplayHarness& h = harness(SchedulerKind::FrFcfs);
    mem::TraceContext ctx;
    ctx.address_limit = card().ddr.total_bytes();
    for (auto _ : state) {
        mem::TraceReader reader(path, format, ctx);
        const mem::ReplayResult r = h.run(reader, {mem::Pacing::Closed, 64});
        benchmark::DoNotOptimize(r.end);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * requests));
    std::filesystem::remove(path);
}

void BM_ReplayFileSequentialCardsim(benchmark::State& state) {
    replay_file(state, mem::TraceFormat::Cardsim);
}
void BM_ReplayFileSequentialDramsim3(benchmark::State& state) {
    replay_file(state, mem::TraceFormat::DramSim3);
}
BENCHMARK(BM_ReplayFileSequentialCardsim)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayFileSequentialDramsim3)->Unit(benchmark::kMillisecond);

/// The timing core alone on one 64 MiB read (a weight stream): simulated bytes per host second,
/// with the closed-form advance of repeating row-hit runs (arg 1) and burst by burst (arg 0).
void BM_TimingCoreWeightStream(benchmark::State& state) {
    mem::ChannelTiming timing(card().ddr);
    timing.set_fast_path(state.range(0) != 0);
    constexpr std::uint64_t bytes = 64ull << 20;
    mem::Cycle cycles = 0;
    for (auto _ : state) {
        timing.reset(0);
        cycles = timing.access(mem::Direction::Read, 0, bytes, 0);
        benchmark::DoNotOptimize(cycles);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
    state.counters["bursts_per_s"] = benchmark::Counter(
        static_cast<double>(state.iterations() * (bytes / 64)), benchmark::Counter::kIsRate);
    state.counters["sim_us"] = mem::MemoryClock(card().ddr.speed_mts).ns(static_cast<double>(cycles)) / 1e3;
}
BENCHMARK(BM_TimingCoreWeightStream)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

} // namespace
