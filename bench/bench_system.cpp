// Host cost of a system of cards: the published Qwen3-8B shape (config.json alone) decoded
// timing-only under tensor parallel over 1, 2, 4 and 8 cards (exact exchange, the default link),
// host seconds of the steps per simulated second. Target (issue 32): 8 cards cost at most 8 times
// the host time of one card for the same simulated time, i.e. host_over_simulated(8) <= 8 x
// host_over_simulated(1). Each iteration runs in a forked child (one simulation per process).

#include "engine/card/card_config.hpp"
#include "engine/lower/lower.hpp"
#include "engine/lower/plan.hpp"
#include "models/build.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"
#include "sim/system/system.hpp"

#include <benchmark/benchmark.h>

#include <array>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

using namespace cardsim;

namespace {

constexpr std::size_t steps = 4;

/// The Qwen3-8B config.json, written once.
std::filesystem::path model_dir() {
    auto dir = std::filesystem::temp_directory_path() / "cardsim-bench" / "qwen3-8b-shapes";
    if (!std::filesystem::exists(dir / "config.json"))
        models::write_config_only(
            models::published_model(models::SynthArch::Dense, models::PublishedSize::B8).config, dir, true);
    return dir;
}

/// In a child: host seconds of the steps and simulated seconds on `cards` cards.
std::array<double, 2> in_child(std::size_t cards) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        std::array<double, 2> out{};
        auto config = card::default_card_config();
        config.system.cards = std::uint32_t(cards);
        auto model = models::load_model(model_dir(), true);
        lower::Options o(graph::Bucket{1, 1, 0}, steps);
        o.shapes_only = true;
        sim::RunPlan plan;
        plan.steps = steps;
        plan.mode = sim::Mode::TimingOnly;
        plan.keep_records = false;
        plan.inputs = [](std::size_t s, const sim::StepOutputs*) {
            return graph::BatchInputs{{std::uint32_t(1 + s)}, {std::uint32_t(s)}, {}, {}, {}, {}, {}, {}};
        };
        if (cards == 1) {
            auto built = models::build_graph(model);
            auto c = lower::lower(built.graph, model.checkpoint, lower::target_of(config), o);
            auto r = sim::simulate(config, c, plan);
            out = {r.host_seconds, r.seconds}; // as a system's: setup and steps
        } else {
            std::vector<models::BuiltGraph> shards;
            std::vector<const graph::Graph*> graphs;
            for (std::size_t k = 0; k < cards; ++k)
                shards.push_back(models::build_shard(
                    model.checkpoint, model.spec,
                    models::Shard{k, cards, graph::Exchange::Exact, config.weights.block_size}));
            for (auto& s : shards)
                graphs.push_back(&s.graph);
            auto compiled = lower::lower_shards(graphs, model.checkpoint, lower::target_of(config), o);
            std::vector<program::Loaded> programs(compiled.begin(), compiled.end());
            auto r = sim::system::simulate(config, programs, plan);
            out = {r.host_seconds, r.seconds};
        }
        ssize_t n = ::write(fds[1], out.data(), sizeof out);
        ::_exit(n == sizeof out ? 0 : 1);
    }
    ::close(fds[1]);
    std::array<double, 2> in{};
    if (::read(fds[0], in.data(), sizeof in) != sizeof in) in = {};
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    return in;
}

/// Tensor parallel over `state.range(0)` cards: host seconds per simulated second.
void decode_qwen3_8b_tensor_parallel(benchmark::State& state) {
    const auto cards = std::size_t(state.range(0));
    double host = 0, simulated = 0;
    for (auto _ : state) {
        auto t = in_child(cards);
        state.SetIterationTime(t[0]);
        host += t[0];
        simulated += t[1];
    }
    state.counters["cards"] = double(cards);
    state.counters["host_over_simulated"] = simulated > 0 ? host / simulated : 0;
    state.counters["simulated_per_token_ms"] = 1e3 * simulated / double(state.iterations() * steps);
}

} // namespace

BENCHMARK(decode_qwen3_8b_tensor_parallel)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->UseManualTime()
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);
