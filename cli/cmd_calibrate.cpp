// `cardsim calibrate MEASURED_TRACE [--config C] -o calibrated.toml`: fits each unit kind's latency
// and width to the per-command measured cycles of a trace (an `--rtl` run's, a hardware capture's),
// prints the residual per kind before (the config's values) and after (the fitted ones), and writes
// a config overlay: C's keys (none: the default card's) with the fitted units.KIND.latency and width.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/output_paths.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "traces/calibration.hpp"
#include "traces/reader.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <sstream>

namespace cardsim::cli {
namespace {

/// The overlay's TOML: the config file's tables (if any) with each fitted kind's latency and width,
/// the width under the key the config reads it from (`CardConfig::lanes_key`: `array_width` for
/// the attention unit with array math).
std::string overlay(const boost::program_options::variables_map& vm, const card::CardConfig& config,
                    const std::vector<traces::KindFit>& fits, const std::string& trace) {
    toml::table root;
    if (vm.count("config")) {
        const std::string file = vm["config"].as<std::string>();
        try {
            root = toml::parse_file(file);
        } catch (const toml::parse_error& e) {
            throw Error(fmt::format("{}: {}", file, e.description()));
        }
    }
    if (!root.contains("units")) root.insert("units", toml::table{});
    auto* units = root["units"].as_table();
    if (!units) throw Error("the config's `units` is not a table");
    for (const auto& f : fits) {
        const std::string kind(card::name(f.kind));
        if (!units->contains(kind)) units->insert(kind, toml::table{});
        auto* t = (*units)[kind].as_table();
        if (!t) throw Error(fmt::format("the config's `units.{}` is not a table", kind));
        t->insert_or_assign("latency", std::int64_t(f.latency));
        t->insert_or_assign(config.lanes_key(f.kind), std::int64_t(f.width));
    }
    std::ostringstream out;
    out << "# Calibrated by `cardsim calibrate " << trace << "`: units.KIND.latency and width (array_width\n"
        << "# for array attention) fitted to the trace's measured cycles (latency + ceil(work / width) per\n"
        << "# command).\n"
        << root << "\n";
    return out.str();
}

int run_calibrate(std::span<const std::string> args) {
    namespace po = boost::program_options;
    // The overlay carries the config file's keys: a --set or --knob would shape the fit and then be
    // missing from what is written, so they are refused rather than dropped (and not offered in
    // the help).
    for (const std::string& a : args)
        for (const std::string_view o : {"set", "knob"})
            if (a == fmt::format("--{}", o) || a.starts_with(fmt::format("--{}=", o)))
                throw Error(
                    fmt::format("calibrate --{}: the overlay written is the --config file's keys with the "
                                "fitted ones, so a --{} would be lost from it: put it in the config file",
                                o, o));
    po::options_description opts("options");
    opts.add_options()("config", po::value<std::string>()->value_name("FILE"),
                       "card config (TOML) merged over the built-in D5005 default; the overlay written "
                       "is its keys with the fitted ones, so any other setting goes in this file")(
        "trace", po::value<std::string>(),
        "the measured trace (its meta measured= lists each command's work and cycles)")(
        "output,o", po::value<std::string>(), "write the calibrated config overlay (TOML) here");
    const char* const positional[] = {"trace"};
    auto vm = parse("calibrate", "MEASURED_TRACE [--config C] -o calibrated.toml", args, opts, positional);
    if (!vm.count("trace"))
        throw Error("calibrate: give the measured trace (cardsim calibrate TRACE -o OUT.toml)");
    if (!vm.count("output")) throw Error("calibrate: give -o OUT.toml, the config overlay to write");
    const std::string path = vm["trace"].as<std::string>();
    Outputs outputs; // checked before any work
    outputs.file("-o", vm["output"].as<std::string>());
    auto config = load_card(vm, {});
    auto t = traces::read_trace(path);
    auto source = traces::source_of(t.header);
    std::vector<traces::KindFit> fits;
    try {
        fits = traces::calibrate(t, config);
    } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", path, e.what()));
    }
    fmt::print("calibrating against {} ({} cycles)\n", path,
               traces::name(source.value_or(traces::Source::Simulated)));
    for (const auto& f : fits)
        fmt::print(
            "{}: {} commands{}\n  config: latency {} width {}: per-command error mean {:.2f} %, max {:.2f} "
            "%\n  fitted: latency {} width {}: per-command error mean {:.2f} %, max {:.2f} %\n",
            card::name(f.kind), f.commands, f.spread ? "" : " (all of one work: the latency kept)",
            f.config_latency, f.config_width, 100 * f.before.mean, 100 * f.before.max, f.latency, f.width,
            100 * f.after.mean, 100 * f.after.max);
    const std::string out = vm["output"].as<std::string>();
    io::write_file_atomically(out, overlay(vm, config, fits, path));
    outputs.keep();
    fmt::print("wrote {} (use it with --config {})\n", out, out);
    return Ok;
}

const Register registered_calibrate{
    {"calibrate",
     "fit each unit kind's latency and width to a measured trace's cycles; write a config overlay",
     run_calibrate}};

} // namespace
} // namespace cardsim::cli
