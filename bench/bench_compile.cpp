// Compile time and peak memory of a generated 0.8B-parameter-shaped hybrid checkpoint (and the
// 0.1B one): load, build the graph, check, quantise every weight on every core, lay out, emit.
// Each iteration compiles in a forked child so its peak resident memory (wait4's ru_maxrss) is its
// own; the counters give it next to the checkpoint's size on disk.

#include "engine/card/card_config.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace cardsim;

namespace {

std::filesystem::path checkpoint(models::SynthSize size) {
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
    return dir;
}

std::uint64_t bytes_on_disk(const std::filesystem::path& dir) {
    std::uint64_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".safetensors") n += e.file_size();
    return n;
}

void compile(benchmark::State& state, models::SynthSize size) {
    auto dir = checkpoint(size);
    double peak_mb = 0;
    for (auto _ : state) {
        auto t0 = std::chrono::steady_clock::now();
        pid_t pid = ::fork();
        if (pid == 0) {
            auto model = models::load_model(dir);
            auto built = models::build_graph(model);
            auto c =
                lower::lower(built.graph, model.checkpoint, lower::target_of(card::default_card_config()),
                             lower::Options{graph::Bucket{1, 1, 0}, 256});
            ::_exit(c.image.chunks.empty() ? 1 : 0);
        }
        int status = 0;
        rusage usage{};
        ::wait4(pid, &status, 0, &usage);
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        peak_mb = std::max(peak_mb, double(usage.ru_maxrss) / 1024.0);
    }
    double ckpt_mb = double(bytes_on_disk(dir)) / (1024.0 * 1024.0);
    state.counters["peak_rss_MiB"] = peak_mb;
    state.counters["checkpoint_MiB"] = ckpt_mb;
    state.counters["peak_over_checkpoint"] = peak_mb / ckpt_mb;
}

void hybrid_0p1b(benchmark::State& s) {
    compile(s, models::SynthSize::B01);
}
void hybrid_0p8b(benchmark::State& s) {
    compile(s, models::SynthSize::B08);
}

} // namespace

BENCHMARK(hybrid_0p1b)->UseManualTime()->Iterations(2)->Unit(benchmark::kMillisecond);
BENCHMARK(hybrid_0p8b)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
