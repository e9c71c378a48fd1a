#pragma once
// Where each point's host time went (DIR/host.csv): the phases `cardsim run --machine` and
// `cardsim serve --machine` report, a row a point. Kept apart from results.csv, whose rows depend
// only on the spec and the simulator (wall clock changes from run to run and machine to machine).

#include "cli/sweep/csv.hpp"

#include <filesystem>
#include <map>
#include <string_view>

namespace cardsim::cli::sweep {

/// DIR/host.csv: its rows by point, appended as points finish, rewritten in point order at the end.
class HostTimes {
public:
    /// Opens (or creates) the file; an existing file's rows are kept (a resumed sweep), a last
    /// record cut short by a crash is dropped, a file written before `host_setup_seconds` existed
    /// gains it (empty), and a file with other columns is a cardsim::Error.
    explicit HostTimes(std::filesystem::path path);
    /// Records point `id`'s phases from its `--machine` output (`host_*=` lines; a phase the
    /// command does not have is an empty cell). Nothing for an output without host lines.
    void add(std::size_t id, std::string_view machine_output);
    /// Rewrites the file atomically with its rows in point order.
    void finish() const;

    /// The columns: `point`, then the phases.
    static CsvRow header();

private:
    std::filesystem::path path_;
    std::map<std::size_t, CsvRow> rows_;
};

} // namespace cardsim::cli::sweep
