#pragma once
// Child processes of `cardsim sweep` and `cardsim plot`: spawning a program with its output going
// to files, and asking how it ended.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace cardsim::cli::sweep {

/// The path of the running cardsim executable (from /proc/self/exe).
std::filesystem::path self_executable();

/// The first executable called `name` on $PATH, if any.
std::optional<std::filesystem::path> find_on_path(std::string_view name);

/// How a child process ended.
struct Ended {
    int code = -1;  ///< exit code, or -1 when killed by a signal
    int signal = 0; ///< the signal that killed it, or 0
    /// `exit code 3` or `killed by signal 9 (Killed)`.
    std::string text() const;
};

/// A running child process, the leader of a process group of its own (what it forks is in it too).
/// Its standard input is /dev/null; its standard output and error go to the given files (created or
/// truncated). Once reaped (`poll` saw it end, or `wait`), how it ended is kept: `poll` and `wait`
/// return it again and `kill` sends nothing (its process id may belong to another process by then).
class Child {
public:
    /// Starts `argv[0]` (a path) with `argv`. Failure to start is a cardsim::Error.
    static Child spawn(const std::vector<std::string>& argv, const std::filesystem::path& out,
                       const std::filesystem::path& err);
    /// How it ended, if it has (does not block).
    std::optional<Ended> poll();
    /// Waits for it to end.
    Ended wait();
    /// Sends `signal` to its process group, it and every process it started; nothing once reaped.
    void kill(int signal) const;
    pid_t pid() const { return pid_; }

private:
    explicit Child(pid_t pid) : pid_(pid) {}
    pid_t pid_;
    std::optional<Ended> ended_; ///< set when reaped
};

} // namespace cardsim::cli::sweep
