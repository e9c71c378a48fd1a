#include "cli/sweep/emit.hpp"

#include "cli/sweep/process.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

namespace cardsim::cli::sweep {

EmitKind parse_emit_kind(std::string_view text) {
    if (text == "slurm") return EmitKind::Slurm;
    if (text == "parallel") return EmitKind::Parallel;
    throw Error(fmt::format("--emit `{}`: expected slurm or parallel", text));
}

std::string shell_quote(std::string_view text) {
    if (!text.empty() &&
        text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:+,") ==
            std::string_view::npos)
        return std::string(text);
    std::string q = "'";
    for (char c : text) {
        if (c == '\'')
            q.append("'\\''");
        else
            q.push_back(c);
    }
    q.push_back('\'');
    return q;
}

std::filesystem::path shard_directory(const std::filesystem::path& dir, std::size_t i) {
    return dir / fmt::format("shard-{}", i);
}

std::string merge_command(const std::filesystem::path& dir, std::size_t shards) {
    std::string cmd = fmt::format("{} sweep --merge", shell_quote(self_executable().string()));
    for (std::size_t i = 0; i < shards; ++i)
        cmd += fmt::format(" {}", shell_quote(shard_directory(dir, i).string()));
    cmd += fmt::format(" -o {}", shell_quote(dir.string()));
    return cmd;
}

namespace {

/// The options every task passes after the shard's own.
std::string pass_through(const EmitOptions& o) {
    std::string s;
    if (o.traces) s += " --traces";
    if (o.retry_failed) s += " --retry-failed";
    if (o.timeout_seconds > 0) s += fmt::format(" --timeout {}", o.timeout_seconds);
    return s;
}

} // namespace

std::filesystem::path emit(const SweepSpec& spec, const std::filesystem::path& dir_in, const EmitOptions& o) {
    if (o.shards == 0) throw Error("--shards: expected at least 1");
    const auto dir = std::filesystem::absolute(dir_in).lexically_normal();
    std::filesystem::create_directories(dir);
    const std::string self = shell_quote(self_executable().string()),
                      spec_path = shell_quote(spec.file.string());
    std::string text;
    std::filesystem::path file;
    if (o.kind == EmitKind::Slurm) {
        file = dir / "sweep.slurm";
        text += "#!/bin/bash\n";
        text += fmt::format(
            "# cardsim sweep `{}` as a Slurm job array: task i runs shard i/{} of the grid into\n"
            "# {}/shard-i. Submit with: sbatch {}\n"
            "# When every task has finished, merge the shards' results into {}/results.csv:\n"
            "#   {}\n",
            spec.name, o.shards, dir.string(), file.string(), dir.string(), merge_command(dir, o.shards));
        text += fmt::format("#SBATCH --job-name=cardsim-{}\n", spec.name);
        text += fmt::format("#SBATCH --array=0-{}\n", o.shards - 1);
        text += fmt::format("#SBATCH --cpus-per-task={}\n", o.jobs);
        text += fmt::format("#SBATCH --output={}/shard-%a.log\n", dir.string());
        text += "set -euo pipefail\n";
        text += fmt::format(
            "task=${{SLURM_ARRAY_TASK_ID:?run this script with sbatch (or set SLURM_ARRAY_TASK_ID)}}\n");
        text += fmt::format("exec {} sweep {} --shard \"$task/{}\" -j \"${{SLURM_CPUS_PER_TASK:-{}}}\" -o "
                            "{}/shard-\"$task\"{}\n",
                            self, spec_path, o.shards, o.jobs, shell_quote(dir.string()), pass_through(o));
    } else {
        file = dir / "sweep.parallel";
        for (std::size_t i = 0; i < o.shards; ++i)
            text += fmt::format("{} sweep {} --shard {}/{} -j {} -o {}{}\n", self, spec_path, i, o.shards,
                                o.jobs, shell_quote(shard_directory(dir, i).string()), pass_through(o));
    }
    io::write_file_atomically(file, text);
    if (o.kind == EmitKind::Slurm)
        std::filesystem::permissions(file, std::filesystem::perms::owner_exec,
                                     std::filesystem::perm_options::add);
    return file;
}

} // namespace cardsim::cli::sweep
