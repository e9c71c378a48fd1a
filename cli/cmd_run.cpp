// `cardsim run MODEL_DIR`: compile, simulate, check bit-exactness and accuracy, write traces.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/pipeline.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <sstream>
#include <unistd.h>

namespace cardsim::cli {
namespace {

/// Token ids from `1,17,42` or `1 17 42`.
std::vector<std::uint32_t> parse_ids(const std::string& text) {
    std::vector<std::uint32_t> ids;
    std::string t = text;
    for (auto& c : t)
        if (c == ',') c = ' ';
    std::istringstream in(t);
    std::string word;
    while (in >> word) {
        std::size_t used = 0;
        unsigned long v = 0;
        try {
            v = std::stoul(word, &used);
        } catch (...) {
            used = 0;
        }
        if (used != word.size() || v > 0xffffffffu)
            throw Error(fmt::format(
                "--prompt: `{}` is not a token id (expected non-negative integers, e.g. 1,17,42)", word));
        ids.push_back(std::uint32_t(v));
    }
    return ids;
}

int run(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add_options()("model", po::value<std::string>()->required(),
                       "checkpoint directory (config.json + safetensors)")(
        "tokens", po::value<std::size_t>()->default_value(8), "tokens to generate (decoders)")(
        "prompt", po::value<std::string>(), "prompt token ids, e.g. 1,17,42 (default: a fixed prompt)")(
        "knob", po::value<std::vector<std::string>>()->composing(),
        "numerics knob k=v (scaling, activations, state, cache, attention)")(
        "trace", po::value<std::string>(), "write the run's trace here")(
        "trace-data", po::bool_switch(), "the trace carries the bytes each command wrote")(
        "perfetto", po::value<std::string>(), "write a Perfetto / Chrome trace JSON here")(
        "vcd", po::value<std::string>(), "write a VCD of unit busy signals and DDR channel activity here")(
        "csv", po::value<std::string>(), "write the per-command table here")(
        "timing-only", po::bool_switch(), "skip the arithmetic (same cycles, no outputs)")(
        "no-reference", po::bool_switch(), "skip the f64 reference")(
        "machine", po::bool_switch(), "print key=value lines instead of the summary");
    const char* const positional[] = {"model"};
    auto vm = parse("run",
                    "MODEL_DIR [--config C] [--set k=v] [--tokens N] [--prompt IDS] [--knob k=v] "
                    "[--trace F] [--perfetto F] [--vcd F] [--timing-only]",
                    args, opts, positional);
    std::vector<card::Override> knobs;
    if (vm.count("knob"))
        for (auto& k : vm["knob"].as<std::vector<std::string>>()) {
            auto o = card::parse_override(k);
            o.path = "numerics." + o.path;
            knobs.push_back(o);
        }
    RunRequest req;
    req.config = load_card(vm, knobs);
    req.model_dir = vm["model"].as<std::string>();
    req.tokens = vm["tokens"].as<std::size_t>();
    if (vm.count("prompt")) req.prompt = parse_ids(vm["prompt"].as<std::string>());
    req.mode = vm["timing-only"].as<bool>() ? sim::Mode::TimingOnly : sim::Mode::Full;
    req.reference = !vm["no-reference"].as<bool>();
    if (vm.count("trace")) req.trace = vm["trace"].as<std::string>();
    if (vm.count("perfetto")) req.perfetto = vm["perfetto"].as<std::string>();
    if (vm.count("vcd")) req.vcd = vm["vcd"].as<std::string>();
    if (vm.count("csv")) req.csv = vm["csv"].as<std::string>();
    req.trace_data = vm["trace-data"].as<bool>();
    req.progress = ::isatty(2) && !vm["machine"].as<bool>();
    auto rep = run_model(req);
    fmt::print("{}", vm["machine"].as<bool>() ? rep.machine() : rep.text());
    return rep.ok() ? Ok : Negative;
}

const Register reg{{"run", "compile a checkpoint, run it on the simulated card, check it bit for bit", run}};

} // namespace
} // namespace cardsim::cli
