// Trace throughput: formatting, parsing and diffing traces of a decode-sized run.

#include "traces/diff.hpp"
#include "traces/perfetto.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"
#include "traces/xxh64.hpp"

#include <benchmark/benchmark.h>

#include <vector>

using namespace cardsim::traces;

namespace {

/// A full-mode trace of `n` commands over four units; every `data_every`-th carries 256 bytes of
/// f32 data (0: none do).
Trace make_trace(std::size_t n, std::size_t data_every) {
    Trace t;
    t.header.ddr_channels = 4;
    const char* units[] = {"dma", "matvec", "norm", "attention"};
    std::vector<std::uint8_t> bytes(256);
    std::uint64_t cycle = 0;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < bytes.size(); ++k)
            bytes[k] = static_cast<std::uint8_t>(i * 7 + k);
        Record r;
        r.index = i;
        r.unit = units[i % 4];
        r.opcode = r.unit + "_op";
        r.start = cycle;
        r.end = cycle + 100 + i % 37;
        cycle += 60;
        r.read = 4096;
        std::vector<WrittenOperand> ops{{bytes, Encoding::F32}};
        set_written(r, ops, data_every && i % data_every == 0);
        r.ddr = {{1024, 64}, {1024, 64}, {1024, 64}, {1024, 64}};
        t.records.push_back(std::move(r));
    }
    return t;
}

void BM_format(benchmark::State& state) {
    auto t = make_trace(static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)));
    std::size_t bytes = 0;
    for (auto _ : state) {
        auto text = to_text(t);
        bytes = text.size();
        benchmark::DoNotOptimize(text.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_parse(benchmark::State& state) {
    auto text = to_text(
        make_trace(static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1))));
    for (auto _ : state) {
        auto t = parse_trace(text, "bench.trace");
        benchmark::DoNotOptimize(t.records.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_diff(benchmark::State& state) {
    auto a = make_trace(static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)));
    auto b = a;
    for (auto _ : state) {
        auto r = diff(a, b, 5.0);
        benchmark::DoNotOptimize(r.paired);
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_perfetto(benchmark::State& state) {
    auto t = make_trace(static_cast<std::size_t>(state.range(0)), 0);
    for (auto _ : state) {
        auto s = to_perfetto(t);
        benchmark::DoNotOptimize(s.data());
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_xxh64(benchmark::State& state) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(state.range(0)), 0x5a);
    for (auto _ : state)
        benchmark::DoNotOptimize(xxh64(bytes));
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

} // namespace

// {commands, one in N carries data (0: none)}
BENCHMARK(BM_format)->Args({100000, 0})->Args({10000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_parse)->Args({100000, 0})->Args({10000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_diff)->Args({100000, 0})->Args({10000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_perfetto)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_xxh64)->Arg(1 << 20);
