#pragma once
// A sweep's results.csv as the charts read it (`cardsim plot` and the sweep report page): its
// axes, its ok rows, which of them fit the chip, and the rules both draw by: the label of each
// figure, which direction of a figure is better, and the Pareto front of a figure against tokens/s
// over the points that fit.

#include "cli/sweep/csv.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::cli::sweep {

/// A results.csv with its columns found. Rows keep the file's order.
struct ResultsTable {
    CsvTable table;
    std::vector<std::size_t> axes; ///< axis columns, and `model` when the sweep has several models
    std::vector<std::size_t> ok;   ///< rows whose status is ok
    std::size_t status = 0;        ///< the status column
    /// The index of column `name` (the header's size when absent).
    std::size_t column(std::string_view name) const;
    /// Whether the header has column `name`.
    bool has(std::string_view name) const { return column(name) < table.header.size(); }
    /// One cell.
    const std::string& at(std::size_t row, std::size_t col) const { return table.rows[row][col]; }
    /// Whether a row's point fits the chip: its `fits` cell is not `no` (results without the
    /// column, written before `cardsim fit` existed, fit).
    bool fits(std::size_t row) const;
    /// The ok rows whose point does not fit.
    std::vector<std::size_t> not_fitting() const;
};

/// Reads a results.csv (a partial last line, from a sweep still running, is dropped). A file
/// without the columns point, model, status and tokens_per_second is a cardsim::Error naming it.
ResultsTable load_results(const std::filesystem::path& file);

/// `s` as a number, if all of it is one.
std::optional<double> number(const std::string& s);

/// Whether every ok row's cell in `col` is a number.
bool numeric(const ResultsTable& r, std::size_t col);

/// The distinct values of `col` over the ok rows, in order of first appearance (numbers sorted).
std::vector<std::string> distinct(const ResultsTable& r, std::size_t col);

/// The axes with more than one value among the ok rows.
std::vector<std::size_t> varying(const ResultsTable& r);

/// The varying axis values of a row, `a/b/c` (its point id when nothing varies).
std::string axis_values(const ResultsTable& r, std::size_t row);

/// What the whole sweep is, for subtitles: its model(s), the points shown and those left out.
std::string subtitle(const ResultsTable& r);

/// How a figure reads on an axis.
std::string label(std::string_view figure);

/// Whether less of a figure is better (errors, KL, DSP blocks, watts); top-1 agreement is the
/// one figure of the fronts where more is better.
bool lower_is_better(std::string_view figure);

/// The figures drawn against tokens/s with their Pareto front, in order: the accuracy figures
/// (full sweeps), the chip's cost in DSP blocks and in watts, then a served trace's p99 latencies
/// (the latency-throughput curve of `[serve]` sweeps).
inline constexpr std::string_view front_figures[] = {"max_abs_error", "kl",          "top1_agreement", "dsp",
                                                     "watts",         "tpot_p99_ms", "ttft_p99_ms"};

/// The points of a scatter that no other point beats on both figures: higher x and lower y
/// (`lower_is_better`) or higher y. Returns their indices, by increasing x.
std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points,
                                      bool lower_is_better);

/// The rows of a figure against tokens/s and its Pareto front.
struct Front {
    std::vector<std::size_t> rows;   ///< ok rows with both figures, fitting or not
    std::vector<std::size_t> front;  ///< indices into rows, by increasing tokens/s
    std::vector<std::size_t> misfit; ///< indices into rows of points that do not fit the chip
};

/// The front of `figure` against tokens/s: only points that fit the chip can be on it (a point
/// that does not fit is not a design); the others are listed in `misfit`.
Front front_of(const ResultsTable& r, std::string_view figure);

} // namespace cardsim::cli::sweep
