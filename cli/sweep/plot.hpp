#pragma once
// Charts of a sweep's results.csv, drawn by gnuplot (a subprocess running a generated script):
// tokens/s and roofline fraction against every swept axis (a line per combination of the other
// axes), and for full runs each accuracy figure against tokens/s with its Pareto front marked.

#include <filesystem>
#include <vector>

namespace cardsim::cli::sweep {

/// What to plot and where.
struct PlotRequest {
    std::filesystem::path results;    ///< a results.csv, or a directory holding one
    std::filesystem::path output_dir; ///< where the charts go (PNG, SVG, and the .gp script of each)
};

/// A chart written: its PNG and SVG, and what it shows.
struct ChartFiles {
    std::filesystem::path png, svg, script;
    std::string title;
};

/// Writes the charts. gnuplot missing from $PATH, a results file without ok rows, or gnuplot
/// failing is a cardsim::Error saying so (and naming the script).
std::vector<ChartFiles> plot_results(const PlotRequest& request);

/// The points of a scatter that no other point beats on both figures: higher x and lower y
/// (`lower_is_better`) or higher y. Returns their indices, by increasing x.
std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points,
                                      bool lower_is_better);

} // namespace cardsim::cli::sweep
