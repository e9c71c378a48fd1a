// `cardsim check MODEL_DIR`: what the card runs of a checkpoint, what it decomposes, what it refuses.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "engine/fit/fit.hpp"
#include "engine/lower/lower.hpp"
#include "engine/shim/check.hpp"
#include "models/model.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

int run(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add_options()("model", po::value<std::string>()->required(), "checkpoint directory");
    const char* const positional[] = {"model"};
    auto vm = parse("check", "MODEL_DIR [--config C] [--set k=v]", args, opts, positional);
    auto config = load_card(vm);
    auto model = models::load_model(vm["model"].as<std::string>());
    auto built = models::build_graph(model);
    auto report = shim::check_model(built.graph, shim::capabilities(config));
    // The arena of a decode step (one token, one sequence) must fit the SRAM, as `run` lowers it.
    if (report.runs() && std::holds_alternative<models::DecoderSpec>(model.spec))
        if (auto why = lower::arena_refusal(built.graph, graph::Bucket{1, 1, 0}, config.sram.bytes))
            report.refusals.push_back({graph::Site{}, *why});
    fmt::print("{}: {}\n{}{}\n", vm["model"].as<std::string>(), models::describe(model.spec),
               report.text(built.graph), fit::verdict_line(fit::check_fit(config)));
    return report.runs() ? Ok : Negative;
}

const Register reg{{"check", "say what the card runs of a checkpoint, per layer, and every refusal", run}};

} // namespace
} // namespace cardsim::cli
