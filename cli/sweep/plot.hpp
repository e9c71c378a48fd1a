#pragma once
// Charts of a sweep's results.csv, drawn by gnuplot (a subprocess running a generated script):
// tokens/s and roofline fraction against every swept axis (a line per combination of the other
// axes), and each accuracy figure (full runs), DSP blocks and watts against tokens/s with their
// Pareto fronts marked. Points that do not fit the chip are drawn as rings and are never on a front.

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

} // namespace cardsim::cli::sweep
