// Host time of the simulated card per decode token, full (bit-exact arithmetic) and timing-only,
// for generated 0.1B- and 0.8B-parameter-shaped hybrid models. SystemC elaborates once per process,
// so each iteration simulates in a forked child and reports the host seconds of its steps (manual
// time): the per-token cost. Elaboration and loading the DDR image, paid once per run, are the
// `setup_ms` counter.
// The models are generated once into $TMPDIR/cardsim-bench (0.8B: 1.5 GB of bf16).

#include "engine/card/card_config.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <sys/wait.h>
#include <unistd.h>

using namespace cardsim;

namespace {

constexpr std::size_t steps = 16;

/// A generated, loaded and compiled hybrid model of `size`.
struct Prepared {
    models::Model model;
    models::BuiltGraph built;
    lower::Compiled compiled;
};

Prepared& prepared(models::SynthSize size) {
    static std::map<models::SynthSize, std::unique_ptr<Prepared>> cache;
    auto& p = cache[size];
    if (!p) {
        auto dir = std::filesystem::temp_directory_path() / "cardsim-bench" / std::string(models::name(size));
        if (!std::filesystem::exists(dir / "config.json")) {
            models::SynthOptions o;
            o.arch = models::SynthArch::Hybrid;
            o.size = size;
            o.seed = 1;
            o.replace = std::filesystem::exists(dir);
            std::filesystem::create_directories(dir.parent_path());
            models::make_model(o, dir);
        }
        auto model = models::load_model(dir);
        auto built = models::build_graph(model);
        auto c = lower::lower(built.graph, model.checkpoint, lower::target_of(card::default_card_config()),
                              lower::Options{graph::Bucket{1, 1, 0}, steps});
        p = std::make_unique<Prepared>(Prepared{std::move(model), std::move(built), std::move(c)});
    }
    return *p;
}

/// Host seconds of the steps, simulated seconds, host seconds of elaboration and image load.
struct Times {
    double host = 0, simulated = 0, setup = 0;
};

/// Simulates `steps` decode steps in a child.
Times simulate_in_child(const lower::Compiled& c, sim::Mode mode) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        auto config = card::default_card_config();
        sim::RunPlan plan;
        plan.steps = steps;
        plan.mode = mode;
        plan.inputs = [](std::size_t s, const sim::StepOutputs*) {
            return graph::BatchInputs{{std::uint32_t(1 + s)}, {std::uint32_t(s)}, {}, {}, {}, {}, {}, {}};
        };
        auto r = sim::simulate(config, c, plan);
        double out[3] = {r.steps_seconds, r.seconds, r.setup_seconds};
        ssize_t n = ::write(fds[1], out, sizeof out);
        ::_exit(n == sizeof out ? 0 : 1);
    }
    ::close(fds[1]);
    double in[3] = {0, 0, 0};
    if (::read(fds[0], in, sizeof in) != sizeof in) in[0] = in[1] = in[2] = 0;
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    return {in[0], in[1], in[2]};
}

void run(benchmark::State& state, models::SynthSize size, sim::Mode mode) {
    auto& p = prepared(size);
    double host = 0, simulated = 0, setup = 0;
    for (auto _ : state) {
        auto t = simulate_in_child(p.compiled, mode);
        state.SetIterationTime(t.host / steps);
        host += t.host;
        simulated += t.simulated;
        setup += t.setup;
    }
    state.counters["setup_ms"] = 1e3 * setup / double(state.iterations());
    state.counters["host_per_token_ms"] = 1e3 * host / double(state.iterations() * steps);
    state.counters["simulated_per_token_ms"] = 1e3 * simulated / double(state.iterations() * steps);
    state.counters["host_over_simulated"] = simulated > 0 ? host / simulated : 0;
}

void hybrid_0p1b_timing_only(benchmark::State& s) {
    run(s, models::SynthSize::B01, sim::Mode::TimingOnly);
}
void hybrid_0p1b_full(benchmark::State& s) {
    run(s, models::SynthSize::B01, sim::Mode::Full);
}
void hybrid_0p8b_timing_only(benchmark::State& s) {
    run(s, models::SynthSize::B08, sim::Mode::TimingOnly);
}
void hybrid_0p8b_full(benchmark::State& s) {
    run(s, models::SynthSize::B08, sim::Mode::Full);
}

} // namespace

BENCHMARK(hybrid_0p1b_timing_only)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(hybrid_0p1b_full)->UseManualTime()->Iterations(2)->Unit(benchmark::kMillisecond);
BENCHMARK(hybrid_0p8b_timing_only)->UseManualTime()->Iterations(2)->Unit(benchmark::kMillisecond);
BENCHMARK(hybrid_0p8b_full)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
