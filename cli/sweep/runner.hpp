#pragma once
// Running a sweep's points: each point is its own `cardsim run --machine` process (SystemC
// elaborates once per process), `jobs` at once; every finished point is recorded in
// DIR/results.csv at once, so an interrupted sweep resumes where it stopped.

#include "cli/sweep/grid.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace cardsim::cli::sweep {

/// How to run the points.
struct RunnerOptions {
    std::size_t jobs = 1;       ///< points at once
    bool traces = false;        ///< write DIR/traces/point-<id>.trace for every point run
    bool retry_failed = false;  ///< run again the points whose row is not `ok`
    double timeout_seconds = 0; ///< kill a point after this long (0: never)
    bool progress = false;      ///< a progress line on standard error (a terminal)
};

/// What a sweep did.
struct SweepOutcome {
    std::size_t points = 0;       ///< points of this run (the grid, or the shard)
    std::size_t already_done = 0; ///< rows found in results.csv and not run again
    std::size_t ran = 0;          ///< points run now
    std::size_t failed = 0;       ///< rows of this run's points whose status is not `ok`
    bool interrupted = false;     ///< stopped by SIGINT or SIGTERM before the end
};

/// Runs `points` (a subset of `grid`) into `dir`: materialises generated models into DIR/models,
/// skips points already in DIR/results.csv, runs the rest, and leaves results.csv in point order.
/// A point that fails (refused, crashed, not bit-exact) is a row with its status and error.
/// SIGINT or SIGTERM stops the sweep: running points are killed and not recorded.
SweepOutcome run_sweep(const SweepSpec& spec, const Grid& grid, const std::vector<Point>& points,
                       const std::filesystem::path& dir, const RunnerOptions& options);

/// The name of the spec whose sweep wrote `dir` (its `name`, default the spec file's stem), as
/// DIR/sweep-settings.txt records it; nothing for a directory without one (written before the
/// name was recorded, or by `--merge`).
std::optional<std::string> recorded_sweep_name(const std::filesystem::path& dir);

/// The checkpoint directory of a model of the spec when the sweep writes into `dir`.
std::filesystem::path model_directory(const ModelSource& model, const std::filesystem::path& dir);

} // namespace cardsim::cli::sweep
