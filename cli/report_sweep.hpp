#pragma once
// The report page of a sweep: its results table (sortable; ok, refused and failed points marked),
// the charts `cardsim plot` draws (as inline SVG), the Pareto fronts, and a run page per point
// whose trace the sweep kept (`--traces`), linked from its row.

#include <filesystem>
#include <vector>

namespace cardsim::cli {

/// What `write_sweep_report` wrote.
struct SweepReportFiles {
    std::filesystem::path page;
    std::vector<std::filesystem::path> point_pages; ///< in OUTPUT_STEM_points/, beside the page
};

/// The folder of a sweep page's point pages: `<page's stem>_points` beside it.
std::filesystem::path sweep_points_folder(const std::filesystem::path& page);

/// Writes the page of the sweep in `results` (its directory, or its results.csv) to `output`,
/// and the run page of every point with a trace in DIR/traces/point-<id>.trace to
/// `sweep_points_folder(output)/point-<id>.html`. A results file that is not a sweep's is a
/// cardsim::Error naming it; a point trace that does not read is noted in its row, not fatal; a
/// page that cannot be written is a cardsim::Error.
SweepReportFiles write_sweep_report(const std::filesystem::path& results,
                                    const std::filesystem::path& output);

} // namespace cardsim::cli
