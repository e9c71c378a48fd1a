// A shapes-only model the size the card is for: the published Qwen3-8B shape (config.json alone).
// How long its compile takes (load the config, build the graph, check, lower with every weight
// placed by shape, never read or packed), its timing-only decode's host time per token against the
// card's simulated time per token, and the peak resident memory of each. Targets (issue 20):
// compile <= 2 s, host <= 1x the simulated time per token, resident memory <= 1 GiB. Each
// iteration runs in a forked child, so its peak resident memory is its own (ru_maxrss).

#include "engine/card/card_config.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace cardsim;

namespace {

constexpr std::size_t steps = 8;

/// The Qwen3-8B (dense) or Qwen3.5-9B (hybrid) config.json, written once.
std::filesystem::path model_dir(models::SynthArch arch) {
    auto dir = std::filesystem::temp_directory_path() / "cardsim-bench" /
               (arch == models::SynthArch::Dense ? "qwen3-8b-shapes" : "qwen3.5-9b-shapes");
    if (!std::filesystem::exists(dir / "config.json"))
        models::write_config_only(models::published_model(arch, models::PublishedSize::B8).config, dir, true);
    return dir;
}

/// In a child: compile seconds, host seconds of the steps, simulated seconds, peak resident MiB
/// (steps 0: compile only).
std::array<double, 4> in_child(const std::filesystem::path& dir, std::size_t run_steps) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
        std::array<double, 4> out{};
        auto t0 = std::chrono::steady_clock::now();
        auto config = card::default_card_config();
        auto model = models::load_model(dir, true);
        auto built = models::build_graph(model);
        lower::Options o(graph::Bucket{1, 1, 0}, steps);
        o.shapes_only = true;
        auto c = lower::lower(built.graph, model.checkpoint, lower::target_of(config), o);
        out[0] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (run_steps) {
            sim::RunPlan plan;
            plan.steps = run_steps;
            plan.mode = sim::Mode::TimingOnly;
            plan.inputs = [](std::size_t s, const sim::StepOutputs*) {
                return graph::BatchInputs{{std::uint32_t(1 + s)}, {std::uint32_t(s)}, {}, {}, {}, {}, {}, {}};
            };
            auto r = sim::simulate(config, c, plan);
            out[1] = r.steps_seconds;
            out[2] = r.seconds;
        }
        rusage u{};
        ::getrusage(RUSAGE_SELF, &u);
        out[3] = double(u.ru_maxrss) / 1024.0;
        ssize_t n = ::write(fds[1], out.data(), sizeof out);
        ::_exit(n == sizeof out ? 0 : 1);
    }
    ::close(fds[1]);
    std::array<double, 4> in{};
    if (::read(fds[0], in.data(), sizeof in) != sizeof in) in = {};
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    return in;
}

void compile(benchmark::State& state, models::SynthArch arch) {
    auto dir = model_dir(arch);
    double rss = 0;
    for (auto _ : state) {
        auto t = in_child(dir, 0);
        state.SetIterationTime(t[0]);
        rss = std::max(rss, t[3]);
    }
    state.counters["peak_rss_mib"] = rss;
}

void decode(benchmark::State& state, models::SynthArch arch) {
    auto dir = model_dir(arch);
    double host = 0, simulated = 0, rss = 0;
    for (auto _ : state) {
        auto t = in_child(dir, steps);
        state.SetIterationTime(t[1] / steps);
        host += t[1];
        simulated += t[2];
        rss = std::max(rss, t[3]);
    }
    const double n = double(state.iterations() * steps);
    state.counters["host_per_token_ms"] = 1e3 * host / n;
    state.counters["simulated_per_token_ms"] = 1e3 * simulated / n;
    state.counters["host_over_simulated"] = simulated > 0 ? host / simulated : 0;
    state.counters["peak_rss_mib"] = rss;
}

void compile_qwen3_8b_shapes_only(benchmark::State& s) {
    compile(s, models::SynthArch::Dense);
}
void decode_qwen3_8b_timing_only(benchmark::State& s) {
    decode(s, models::SynthArch::Dense);
}
void compile_qwen3_5_9b_shapes_only(benchmark::State& s) {
    compile(s, models::SynthArch::Hybrid);
}
void decode_qwen3_5_9b_timing_only(benchmark::State& s) {
    decode(s, models::SynthArch::Hybrid);
}

} // namespace

BENCHMARK(compile_qwen3_8b_shapes_only)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK(decode_qwen3_8b_timing_only)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK(compile_qwen3_5_9b_shapes_only)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK(decode_qwen3_5_9b_timing_only)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
