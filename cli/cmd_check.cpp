// `cardsim check MODEL_DIR`: what the card runs of a checkpoint, what it decomposes, what it refuses.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "engine/fit/fit.hpp"
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
    fmt::print("{}: {}\n{}{}\n", vm["model"].as<std::string>(), models::describe(model.spec),
               report.text(built.graph), fit::verdict_line(fit::check_fit(config)));
    return report.runs() ? Ok : Negative;
}

const Register reg{{"check", "say what the card runs of a checkpoint, per layer, and every refusal", run}};

} // namespace
} // namespace cardsim::cli
