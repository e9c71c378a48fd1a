// Speed of the models layer: writing synthetic checkpoints, opening and building, reading weights
// through views, and one decode token of the f64 reference and of the f64 graph evaluator.

#include "models/graph_eval.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "models/synthetic.hpp"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <unistd.h>

namespace {

using namespace cardsim::models;

/// A synthetic checkpoint written once per process under the temp dir, removed at exit.
const std::filesystem::path& checkpoint(SynthArch arch, SynthSize size) {
    struct Made {
        std::filesystem::path dir;
        ~Made() { std::filesystem::remove_all(dir); }
    };
    static std::map<std::pair<SynthArch, SynthSize>, Made> made;
    auto& m = made[{arch, size}];
    if (m.dir.empty()) {
        m.dir = std::filesystem::temp_directory_path() /
                ("cardsim-bench-" + std::string(name(arch)) + "-" + std::string(name(size)) + "-" +
                 std::to_string(::getpid()));
        SynthOptions o;
        o.arch = arch;
        o.size = size;
        o.replace = true;
        make_model(o, m.dir);
    }
    return m.dir;
}

/// make-model of the 0.1b hybrid (about 110 M parameters, bf16), two threads.
void BM_MakeModel_Hybrid_0_1b(benchmark::State& state) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("cardsim-bench-make-" + std::to_string(::getpid()));
    std::size_t bytes = 0;
    for (auto _ : state) {
        SynthOptions o;
        o.arch = SynthArch::Hybrid;
        o.size = SynthSize::B01;
        o.replace = true;
        bytes = make_model(o, dir).bytes;
    }
    std::filesystem::remove_all(dir);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_MakeModel_Hybrid_0_1b)->Unit(benchmark::kMillisecond)->Iterations(3);

/// Open (map + validate), recognise and build the 0.1b hybrid's graph.
void BM_LoadAndBuild_Hybrid_0_1b(benchmark::State& state) {
    const auto& dir = checkpoint(SynthArch::Hybrid, SynthSize::B01);
    for (auto _ : state) {
        const auto m = load_model(dir);
        benchmark::DoNotOptimize(build_graph(m).graph.ops.size());
    }
}
BENCHMARK(BM_LoadAndBuild_Hybrid_0_1b)->Unit(benchmark::kMillisecond);

/// read_f32 of the 0.1b hybrid's bf16 embedding (32768 × 768).
void BM_ReadF32_Bf16Embedding(benchmark::State& state) {
    const auto m = load_model(checkpoint(SynthArch::Hybrid, SynthSize::B01));
    const auto w = m.checkpoint.require("model.language_model.embed_tokens.weight");
    std::vector<float> out(m.checkpoint.info(w).numel());
    for (auto _ : state) {
        m.checkpoint.read_f32(w, cardsim::graph::Whole{}, out);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * out.size() * 2));
}
BENCHMARK(BM_ReadF32_Bf16Embedding)->Unit(benchmark::kMillisecond);

/// One token through the f64 reference of the small hybrid (8 layers, hidden 128).
void BM_ReferenceToken_HybridSmall(benchmark::State& state) {
    const auto m = load_model(checkpoint(SynthArch::Hybrid, SynthSize::Small));
    const DecoderReference ref(m.checkpoint);
    auto s = ref.start();
    std::int64_t t = 1;
    for (auto _ : state) {
        auto logits = s.feed(t);
        t = (t * 7 + 3) % 512;
        benchmark::DoNotOptimize(logits.data());
    }
}
BENCHMARK(BM_ReferenceToken_HybridSmall)->Unit(benchmark::kMicrosecond)->Iterations(64);

/// One decode step of one sequence through the f64 graph evaluator of the small hybrid.
void BM_GraphEvalStep_HybridSmall(benchmark::State& state) {
    const auto m = load_model(checkpoint(SynthArch::Hybrid, SynthSize::Small));
    const auto g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    std::int64_t t = 1;
    for (auto _ : state) {
        const DecodeRow row{0, t};
        auto out = eval.step(std::span(&row, 1));
        t = out.next[0];
        benchmark::DoNotOptimize(out.logits.data.data());
    }
}
BENCHMARK(BM_GraphEvalStep_HybridSmall)->Unit(benchmark::kMicrosecond)->Iterations(64);

} // namespace
