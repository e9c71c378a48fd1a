// Report page generation: the run page of a trace the size of one 0.8B decode step (about 500
// commands) and of a long run (100 000 commands, more than the timeline has pixels). How fast
// the page then opens in a browser is measured with headless Chromium (docs/reports.md).

#include "traces/report/run_page.hpp"

#include <benchmark/benchmark.h>

#include <vector>

using namespace cardsim::traces;

namespace {

/// A timing-only trace of `n` commands over sixteen units on four DDR channels, a matvec in every
/// fourth command streaming weights while the others overlap it.
Trace make_trace(std::size_t n) {
    Trace t;
    t.header.mode = Mode::TimingOnly;
    t.header.ddr_channels = 4;
    const char* units[] = {"matvec",    "norm",       "conv",         "gates",       "delta",  "add",
                           "dma",       "rotation",   "embed",        "argmax",      "l2norm", "silu_mul",
                           "attention", "gated_norm", "cache_append", "sigmoid_gate"};
    std::uint64_t cycle = 0;
    for (std::size_t i = 0; i < n; ++i) {
        Record r;
        r.index = i;
        r.pc = i % 500;
        r.unit = i % 4 == 0 ? "matvec" : units[1 + i % 15];
        r.opcode = r.unit + "_op";
        r.start = cycle;
        r.end = cycle + (r.unit == "matvec" ? 24000 : 300 + i % 37);
        cycle += r.unit == "matvec" ? 24000 : 40;
        r.read = r.unit == "matvec" ? 1'700'000 : 4096;
        r.written = 4096;
        for (int c = 0; c < 4; ++c)
            r.ddr.push_back({r.read / 4, r.written / 4});
        t.records.push_back(std::move(r));
    }
    return t;
}

void BM_run_page(benchmark::State& state) {
    auto t = make_trace(static_cast<std::size_t>(state.range(0)));
    std::vector<std::string> operands(
        500, "    7  matvec         Matvec        w=weights+0x1000[4096]r x=arena+0x0[1024]r");
    std::size_t bytes = 0;
    for (auto _ : state) {
        auto page = report::run_page({t, std::nullopt, "bench", operands});
        bytes = page.size();
        benchmark::DoNotOptimize(page.data());
    }
    state.counters["page_bytes"] = double(bytes);
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_run_page)->Arg(500)->Arg(100'000)->Unit(benchmark::kMillisecond);

} // namespace
