// `cardsim fit [--config C] [--set k=v] [--knob k=v]`: whether a card config can be built — its
// resources per unit kind and in total against the device, the estimated Fmax, the power — with
// the verdict in sentences. Exit 0 when it fits, 1 when it does not.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "engine/fit/fit.hpp"

#include <fmt/core.h>

#include <array>
#include <string_view>

namespace cardsim::cli {
namespace {

int run_fit(std::span<const std::string> args) {
    boost::program_options::options_description opts("options");
    opts.add(card_options());
    opts.add(knob_options());
    auto vm = parse("fit", "[--config C] [--set k=v] [--knob k=v]", args, opts);
    auto knobs = knob_overrides(vm);
    // One card's logic: the system's keys (its cards, topology, exchange) and the links' are read
    // by nothing here.
    constexpr std::array<std::string_view, 9> fit_reads{
        "clock.",    "ddr.",     "sram.", "command_processor.", "units.", "capabilities.",
        "numerics.", "weights.", "fit."};
    refuse_unread_sets(vm, knobs, "fit", fit_reads, "one card's logic, not its system's ([system], [link])");
    auto config = load_card_any_system(vm, knobs);
    auto report = fit::check_fit(config);
    fmt::print("card {} at {} ({})\n{}", config.name, numerics::to_string(config.numerics),
               config.fit.device.name, fit::describe(report, config.fit.device.name));
    return report.fits() ? Ok : Negative;
}

const Register registered_fit{
    {"fit", "say whether a card config fits the FPGA: resources, Fmax and power per unit kind", run_fit}};

} // namespace
} // namespace cardsim::cli
