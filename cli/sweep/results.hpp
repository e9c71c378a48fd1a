#pragma once
// The results of a sweep: `DIR/results.csv`, one row a point, in point order once the sweep ends.
//
// Columns: `point`, `model`, one per axis (its dotted path), `status`, then the figures (cycles,
// seconds, tokens_per_second, ddr_bytes, bandwidth_gbs, roofline_fraction, busy_<unit> for every
// unit kind the points may have, arena_bytes, sram_fraction; for full runs bit_exact,
// max_abs_error, top1_agreement, kl), then `error`. The columns between `model` and `status` are
// the axes: `cardsim plot` and `--merge` read them from the header.

#include "cli/sweep/csv.hpp"
#include "cli/sweep/grid.hpp"
#include "cli/sweep/process.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::cli::sweep {

/// What a point's run ended as (the `status` column): `ok`; `mismatch` (not bit-exact); `fault`
/// (a bus error stopped the run); `error` (bad input, e.g. the card refuses the model or the
/// config combination is invalid); `crashed` (killed by a signal or an internal error);
/// `timeout` (killed after --timeout).
enum class Status { Ok, Mismatch, Fault, Refused, Error, Crashed, Timeout };

/// The spelling of a status in the CSV.
std::string_view name(Status s);

/// The column names of the spec's results.csv.
CsvRow result_columns(const SweepSpec& spec);

/// What one run of `cardsim run --machine` gave.
struct RunOutput {
    Ended ended;
    std::string out, err; ///< its standard output (key=value lines) and standard error
    bool timed_out = false;
};

/// The results row of `point` from its run; `config` is the point's card config (for busy
/// fractions per unit instance and the SRAM fraction) when it loaded. Paths of the model's
/// directory in error text are replaced by the model's name, so rows do not depend on where the
/// sweep ran.
CsvRow result_row(const SweepSpec& spec, const Point& point, const std::optional<card::CardConfig>& config,
                  const std::filesystem::path& model_dir, const RunOutput& run);

/// The row of a point whose card config could not be made (an invalid combination of values):
/// status `error` with the message.
CsvRow error_row(const SweepSpec& spec, const Point& point, const std::string& message);

/// `DIR/results.csv` of a running sweep: the rows done so far, by point id.
class ResultsFile {
public:
    /// Opens (or creates) the file for `spec`'s columns. An existing file with other columns, or a
    /// row whose model or axis values differ from the spec's point of that id, is a cardsim::Error
    /// (the directory holds another sweep). A last record cut short by a crash is dropped. The file
    /// is rewritten atomically with the rows it keeps.
    ResultsFile(std::filesystem::path path, const SweepSpec& spec, const Grid& grid);

    /// The row of point `id`, if it is done.
    const CsvRow* row(std::size_t id) const;
    /// Drops the rows whose status is not `ok` (to run them again).
    void forget_failures();
    /// Records a row: appended to the file as one record (O_APPEND, fsync).
    void add(CsvRow row);
    /// Rewrites the file atomically with its rows in point order.
    void finish() const;
    const std::filesystem::path& path() const { return path_; }
    std::size_t status_column() const { return status_column_; }

private:
    std::filesystem::path path_;
    CsvRow header_;
    std::size_t status_column_ = 0;
    std::map<std::size_t, CsvRow> rows_;
};

/// `key=value` lines (`cardsim run --machine`) into a map (later keys win).
std::map<std::string, std::string, std::less<>> key_values(std::string_view text);

/// The point id of a row (its first cell); a cardsim::Error naming `where` if it is not one.
std::size_t row_id(const CsvRow& row, std::string_view where);

/// Merges the results.csv files (or directories holding one) in `inputs` into `output`: one row a
/// point, in point order. Inputs must share one header; a point in two inputs must have the same
/// row in both. Returns the rows written and how many of them are not ok.
struct MergeOutcome {
    std::size_t rows = 0;   ///< rows written, one a point
    std::size_t failed = 0; ///< rows whose status is not ok (a merged sweep with any exits 1)
};
MergeOutcome merge_results(const std::vector<std::filesystem::path>& inputs,
                           const std::filesystem::path& output);

} // namespace cardsim::cli::sweep
