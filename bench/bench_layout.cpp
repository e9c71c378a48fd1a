// Arena layout time on a 64-layer decoder step and a 28-layer encoder, by the fast layout and by
// the seed's quadratic scan (which must give the same offsets; tests check that).

#include "engine/graph/examples.hpp"
#include "engine/graph/layout.hpp"

#include <benchmark/benchmark.h>

using namespace cardsim::graph;

namespace {

const Graph& decoder64() {
    static const Graph g = example_decoder(DecoderShape{});
    return g;
}
const Graph& encoder28() {
    static const Graph g = example_encoder(EncoderShape{});
    return g;
}

template <Layout (*F)(const Graph&, const Bucket&)>
void run(benchmark::State& state, const Graph& g, Bucket b) {
    for (auto _ : state)
        benchmark::DoNotOptimize(F(g, b));
    state.counters["values"] = double(g.vals.size());
    state.counters["ops"] = double(g.ops.size());
}

void decoder_fast(benchmark::State& s) {
    run<layout>(s, decoder64(), Bucket{8, 8, 0});
}
void decoder_scan(benchmark::State& s) {
    run<layout_by_scan>(s, decoder64(), Bucket{8, 8, 0});
}
void encoder_fast(benchmark::State& s) {
    run<layout>(s, encoder28(), Bucket{512, 4, 16});
}
void encoder_scan(benchmark::State& s) {
    run<layout_by_scan>(s, encoder28(), Bucket{512, 4, 16});
}

} // namespace

BENCHMARK(decoder_fast)->Unit(benchmark::kMicrosecond);
BENCHMARK(decoder_scan)->Unit(benchmark::kMicrosecond);
BENCHMARK(encoder_fast)->Unit(benchmark::kMicrosecond);
BENCHMARK(encoder_scan)->Unit(benchmark::kMicrosecond);
