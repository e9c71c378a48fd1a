// `cardsim plot DIR`: PNG and SVG charts of a sweep's results.csv, drawn by gnuplot.

#include "cli/command.hpp"
#include "cli/output_paths.hpp"
#include "cli/sweep/plot.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

int run_plot(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()("dir", po::value<std::string>()->required(),
                    "a sweep's output directory (or its results.csv)")(
        "output,o", po::value<std::string>(), "where the charts go (default: DIR/plots)");
    const char* const positional[] = {"dir"};
    auto vm = parse("plot", "DIR [-o PLOT_DIR]", args, o, positional);
    sweep::PlotRequest req;
    req.results = vm["dir"].as<std::string>();
    auto base = std::filesystem::is_directory(req.results) ? req.results : req.results.parent_path();
    req.output_dir =
        vm.count("output") ? std::filesystem::path(vm["output"].as<std::string>()) : base / "plots";
    Outputs outputs; // checked before any work; a folder made here is removed again if plotting fails
    outputs.folder("-o", req.output_dir);
    auto charts = sweep::plot_results(req);
    outputs.keep();
    for (auto& c : charts)
        fmt::print("{}: {} (and {}, script {})\n", c.png.string(), c.title, c.svg.filename().string(),
                   c.script.filename().string());
    return Ok;
}

const Register registered_plot{
    {"plot", "chart a sweep's results (gnuplot): tokens/s per axis, accuracy vs throughput", run_plot}};

} // namespace
} // namespace cardsim::cli
