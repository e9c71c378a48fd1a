// Host time of serving a request trace on the simulated card: 32 requests arriving at 1 000 a
// second (every point saturated), prompts of 16 and 32 output tokens, on the 0.1B and 0.8B hybrid
// shapes (config.json alone, timing-only), decode-first with chunked prefill at token budgets of 1,
// 4 and 16 rows a step (the serve figures of docs/figures.md). SystemC elaborates once per process, so each
// iteration serves in a forked child and reports the host seconds of its steps (manual time).
// Counters: host seconds per simulated second, output tokens per simulated second, steps.

#include "engine/card/card_config.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "serve/generate.hpp"
#include "serve/scheduler.hpp"
#include "sim/card/simulation.hpp"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

using namespace cardsim;

namespace {

/// The shapes-only checkpoint of the hybrid of `size`, written once into $TMPDIR/cardsim-bench.
std::filesystem::path shapes(models::SynthSize size) {
    auto dir = std::filesystem::temp_directory_path() / "cardsim-bench" /
               ("shapes-" + std::string(models::name(size)));
    if (!std::filesystem::exists(dir / "config.json")) {
        std::filesystem::create_directories(dir.parent_path());
        models::write_config_only(models::synth_config(models::SynthArch::Hybrid, size), dir,
                                  std::filesystem::exists(dir));
    }
    return dir;
}

/// What one served trace took.
struct Served {
    double host = 0, simulated = 0, tokens = 0, steps = 0;
};

/// Serves the saturating trace on the hybrid of `size` with a budget of `budget` rows, in a child.
Served serve_in_child(models::SynthSize size, std::size_t budget) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        const auto config = card::default_card_config();
        auto model = models::load_model(shapes(size), true);
        auto built = models::build_graph(model);
        serve::PoissonSpec spec;
        spec.rate = 1000;
        spec.count = 32;
        spec.prompt = {16, 16};
        spec.output = {32, 32};
        auto requests = serve::poisson(spec);
        std::vector<graph::Bucket> buckets;
        std::vector<std::size_t> rows;
        for (std::size_t r = 1; r < budget; r *= 2)
            buckets.push_back({r, 1, 0});
        buckets.push_back({budget, 1, 0});
        for (auto& b : buckets)
            rows.push_back(b.tokens);
        lower::Options o{buckets.front(), 16 + 32 - 1};
        o.shapes_only = true;
        o.slots = budget;
        std::vector<program::Loaded> set;
        for (auto& c : lower::lower_set(built.graph, model.checkpoint, lower::target_of(config), o, buckets))
            set.push_back(std::move(c));
        serve::Policy policy;
        policy.token_budget = budget;
        const auto vocab = built.graph.shape(*built.graph.logits).width;
        serve::Scheduler scheduler(requests, policy, serve::Capacity{rows, budget, o.max_positions, vocab});
        const auto pad = std::uint32_t(set.front().io.pad_slot());
        std::optional<double> running;
        double steps = 0;
        sim::SessionPlan plan;
        plan.mode = sim::Mode::TimingOnly;
        plan.next = [&](std::size_t, double now, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
            if (running) scheduler.done(*running, now, {});
            auto s = scheduler.next(now);
            if (!s) return std::nullopt;
            sim::SessionStep st;
            st.bucket = s->bucket;
            st.not_before_seconds = s->not_before_seconds;
            for (auto& r : s->rows) {
                st.inputs.ids.push_back(r.id);
                st.inputs.positions.push_back(r.position);
                st.inputs.slots.push_back(r.slot);
            }
            st.inputs.ids.resize(rows[s->bucket], 0);
            st.inputs.positions.resize(rows[s->bucket], 0);
            st.inputs.slots.resize(rows[s->bucket], pad);
            running = std::max(now, s->not_before_seconds);
            ++steps;
            return st;
        };
        auto r = sim::simulate(config, set, plan);
        double out[4] = {r.steps_seconds, r.seconds, double(spec.count * 32), steps};
        ssize_t n = ::write(fds[1], out, sizeof out);
        ::_exit(n == sizeof out && !r.fault ? 0 : 1);
    }
    ::close(fds[1]);
    double in[4] = {0, 0, 0, 0};
    if (::read(fds[0], in, sizeof in) != sizeof in) in[0] = in[1] = in[2] = in[3] = 0;
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    return {in[0], in[1], in[2], in[3]};
}

void run(benchmark::State& state, models::SynthSize size) {
    const auto budget = std::size_t(state.range(0));
    Served all;
    for (auto _ : state) {
        auto s = serve_in_child(size, budget);
        state.SetIterationTime(s.host);
        all.host += s.host;
        all.simulated += s.simulated;
        all.tokens += s.tokens;
        all.steps = s.steps;
    }
    state.counters["host_over_simulated"] = all.simulated > 0 ? all.host / all.simulated : 0;
    state.counters["tokens_per_second"] = all.simulated > 0 ? all.tokens / all.simulated : 0;
    state.counters["steps"] = all.steps;
}

void hybrid_0p1b_serve(benchmark::State& s) {
    run(s, models::SynthSize::B01);
}
void hybrid_0p8b_serve(benchmark::State& s) {
    run(s, models::SynthSize::B08);
}

} // namespace

BENCHMARK(hybrid_0p1b_serve)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->UseManualTime()
    ->Iterations(2)
    ->Unit(benchmark::kSecond);
BENCHMARK(hybrid_0p8b_serve)
    ->Arg(1)
    ->Arg(4)
    ->Arg(16)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
