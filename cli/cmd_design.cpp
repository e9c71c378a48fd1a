// `cardsim design RUN_DIR SERVE_DIR`: the card's design rule applied to a design sweep's two result
// sets (prefill and decode, serving), joined on their axis values (docs/design.md).

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/sweep/design_rule.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

int run_design(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()(
        "run", po::value<std::string>()->required(),
        "the prefill-and-decode sweep's output directory (configs/sweeps/design.toml) or its results.csv")(
        "serve", po::value<std::string>()->required(),
        "the serving sweep's output directory (configs/sweeps/design_serve.toml) or its results.csv")(
        "decode-tolerance", po::value<double>()->default_value(0.02),
        "how far below the best decode tokens/s a point may be, a fraction")(
        "tie-tolerance", po::value<double>()->default_value(0.02),
        "serving tokens/s and TTFT this close to the best count as tied, a fraction");
    o.add(card_options());
    const char* const positional[] = {"run", "serve"};
    auto vm = parse("design",
                    "RUN_DIR SERVE_DIR [--decode-tolerance F] [--tie-tolerance F] [--config C] [--set k=v]",
                    args, o, positional);
    // The DDR the units stream from: the config's (the design sweeps do not move it). The rule reads
    // the DDR keys alone: any other --set would be ignored, so it is refused.
    if (vm.count("set"))
        for (const auto& s : vm["set"].as<std::vector<std::string>>())
            if (!s.starts_with("ddr."))
                throw Error(
                    fmt::format("cardsim design: --set {}: the design rule reads the DDR keys alone (the "
                                "port's clock), the rest comes from the sweeps' results (drop it)",
                                s));
    const auto config = load_card(vm);
    // The slowest kernel clock at which a channel's user port (ddr.port_bits) takes its DRAM's peak.
    const double port_mhz = config.ddr.channel_peak_bytes_per_second() / (config.ddr.port_bits / 8.0) / 1e6;
    sweep::DesignRule rule{vm["decode-tolerance"].as<double>(), vm["tie-tolerance"].as<double>(), port_mhz};
    for (auto [name, value] : {std::pair{"decode-tolerance", rule.decode_tolerance},
                               std::pair{"tie-tolerance", rule.tie_tolerance}})
        if (!(value >= 0 && value < 1))
            throw Error(fmt::format("cardsim design: --{} {}: expected a fraction in [0, 1)", name, value));
    auto points = sweep::join_design_sweeps(vm["run"].as<std::string>(), vm["serve"].as<std::string>());
    if (points.empty())
        throw Error(fmt::format("cardsim design: {} and {} share no point that is ok in both",
                                vm["run"].as<std::string>(), vm["serve"].as<std::string>()));
    auto verdict = sweep::choose_design(points, rule);
    fmt::print("{}", sweep::design_table(points, verdict, rule));
    return verdict.chosen ? Ok : Negative;
}

const Register registered_design{
    {"design",
     "the card's design rule over a design sweep's prefill/decode and serving results: the table "
     "and the chosen point",
     run_design}};

} // namespace
} // namespace cardsim::cli
