// `cardsim demo`: the embedded default job. Generates a small hybrid (Gated-DeltaNet + gated
// attention) checkpoint in the cache folder if it is absent, runs it on the default card for a few
// tokens, and prints the card's summary, the bit-exact verdict and the accuracy.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/pipeline.hpp"
#include "engine/lower/pack_cache.hpp"
#include "models/synthetic.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace cardsim::cli {
namespace {

/// Where the demo keeps its checkpoint: $XDG_CACHE_HOME/cardsim, else ~/.cache/cardsim, else the
/// temporary folder.
std::filesystem::path cache_folder() {
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "cardsim";
    if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "cardsim";
    return std::filesystem::temp_directory_path() / "cardsim";
}

int run_demo(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add_options()("tokens", po::value<std::size_t>()->default_value(8), "tokens to generate")(
        "model", po::value<std::string>(), "checkpoint folder (default: the cache folder's demo model)");
    auto vm = parse("demo", "[--tokens N] [--model DIR] [--config C] [--set k=v]", args, opts);
    std::filesystem::path dir = vm.count("model") ? std::filesystem::path(vm["model"].as<std::string>())
                                                  : cache_folder() / "demo-hybrid-small-seed1";
    if (!std::filesystem::exists(dir / "config.json")) {
        std::filesystem::create_directories(dir.parent_path());
        models::SynthOptions opt;
        opt.arch = models::SynthArch::Hybrid;
        opt.size = models::SynthSize::Small;
        opt.seed = 1;
        opt.replace = std::filesystem::exists(dir);
        auto made = models::make_model(opt, dir);
        fmt::print("generated {} ({} parameters)\n", dir.string(), made.parameters);
    }
    RunRequest req;
    req.config = load_card(vm);
    req.model_dir = dir;
    req.pack_cache = lower::pack_cache_from_environment();
    req.tokens = vm["tokens"].as<std::size_t>();
    req.progress = ::isatty(2);
    fmt::print(
        "cardsim demo: {} on the {} card ({} DDR channels at {} MT/s, kernel clock {} MHz), numerics {}\n\n",
        dir.filename().string(), req.config.name, req.config.ddr.channels, req.config.ddr.speed_mts,
        req.config.clock.kernel_mhz, numerics::to_string(req.config.numerics));
    auto rep = run_model(req);
    fmt::print("{}", rep.text());
    return rep.ok() ? Ok : Negative;
}

const Register registered_demo{
    {"demo", "the embedded default job: a small hybrid model, a timed bit-exact run", run_demo}};

} // namespace
} // namespace cardsim::cli
