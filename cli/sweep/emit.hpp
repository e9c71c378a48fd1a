#pragma once
// Running a sweep past one machine: a Slurm job-array script or a GNU parallel command file whose
// tasks are the sweep's shards (`cardsim sweep SPEC --shard i/N -o DIR/shard-i`), merged afterwards
// with `cardsim sweep --merge DIR/shard-0 ... -o DIR`.

#include "cli/sweep/spec.hpp"

#include <filesystem>
#include <string>

namespace cardsim::cli::sweep {

/// Which cluster runner to write for.
enum class EmitKind { Slurm, Parallel };

/// Parses `slurm` or `parallel`; anything else is a cardsim::Error.
EmitKind parse_emit_kind(std::string_view text);

/// What the emitted tasks run.
struct EmitOptions {
    EmitKind kind = EmitKind::Slurm;
    std::size_t shards = 1;     ///< tasks (shards of the grid)
    std::size_t jobs = 1;       ///< points at once inside one task
    bool traces = false;        ///< pass --traces
    bool retry_failed = false;  ///< pass --retry-failed
    double timeout_seconds = 0; ///< pass --timeout when positive
};

/// The directory of shard `i` of a sweep into `dir`.
std::filesystem::path shard_directory(const std::filesystem::path& dir, std::size_t i);

/// The `cardsim sweep --merge ...` command that joins the shards' results into DIR/results.csv.
std::string merge_command(const std::filesystem::path& dir, std::size_t shards);

/// Writes DIR/sweep.slurm (a job array of the shards) or DIR/sweep.parallel (one command line a
/// shard, for `parallel :::: FILE`) atomically; returns its path.
std::filesystem::path emit(const SweepSpec& spec, const std::filesystem::path& dir,
                           const EmitOptions& options);

/// `text` quoted for a POSIX shell.
std::string shell_quote(std::string_view text);

} // namespace cardsim::cli::sweep
