// Replay speed of the DDR4 model: memory requests simulated per host second, through the same
// TLM path `cardsim ddr replay` and the card use (player -> DdrMemory -> DdrChannel -> timing
// core), closed pacing with 64 outstanding, one core. Target: >= 10 M requests per host second
// for sequential traffic. Also: the timing core alone on a weight stream (one large request).

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_timing.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_patterns.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace {

namespace mem = cardsim::sim::memory;

constexpr std::uint64_t requests = 1 << 20;

const cardsim::card::CardConfig& card() {
    static const cardsim::card::CardConfig config = cardsim::card::default_card_config();
    return config;
}

/// The one harness of the process (SystemC elaborates once).
mem::ReplayHarness& harness() {
    static const bool quiet = [] { return setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1) == 0; }();
    (void)quiet;
    static mem::ReplayHarness h(card().ddr);
    return h;
}

mem::PatternSpec pattern(mem::PatternKind kind) {
    mem::PatternSpec spec;
    spec.kind = kind;
    spec.count = requests;
    spec.span = 1ull << 30;
    return spec;
}

void replay_pattern(benchmark::State& state, mem::PatternKind kind) {
    mem::ReplayHarness& h = harness();
    double bandwidth = 0;
    for (auto _ : state) {
        mem::PatternGenerator gen(pattern(kind), mem::MemoryClock(card().ddr.speed_mts));
        const mem::ReplayResult r = h.run(gen, {mem::Pacing::Closed, 64});
        bandwidth = mem::total_bandwidth(r, card().ddr);
        benchmark::DoNotOptimize(r.end);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * requests));
    state.counters["sim_GBps"] = bandwidth / 1e9;
}

void BM_ReplaySequential(benchmark::State& state) {
    replay_pattern(state, mem::PatternKind::Sequential);
}
void BM_ReplayRandom(benchmark::State& state) {
    replay_pattern(state, mem::PatternKind::Random);
}
BENCHMARK(BM_ReplaySequential)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayRandom)->Unit(benchmark::kMillisecond);

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
    mem::ReplayHarness& h = harness();
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
