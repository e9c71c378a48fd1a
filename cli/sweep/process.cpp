#include "cli/sweep/process.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace cardsim::cli::sweep {

std::filesystem::path self_executable() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        throw Error(
            fmt::format("cannot find the cardsim executable through /proc/self/exe: {}", ec.message()));
    return p;
}

std::optional<std::filesystem::path> find_on_path(std::string_view name) {
    const char* path = std::getenv("PATH");
    if (!path) return std::nullopt;
    std::string_view rest(path);
    while (true) {
        auto colon = rest.find(':');
        auto dir = rest.substr(0, colon);
        if (!dir.empty()) {
            auto candidate = std::filesystem::path(dir) / name;
            if (::access(candidate.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(candidate))
                return candidate;
        }
        if (colon == std::string_view::npos) return std::nullopt;
        rest.remove_prefix(colon + 1);
    }
}

std::string Ended::text() const {
    if (signal) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
    return fmt::format("exit code {}", code);
}

namespace {

/// How a wait status reads.
Ended ended(int status) {
    Ended e;
    if (WIFEXITED(status))
        e.code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        e.signal = WTERMSIG(status);
    return e;
}

} // namespace

Child Child::spawn(const std::vector<std::string>& argv, const std::filesystem::path& out,
                   const std::filesystem::path& err) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // Its own process group: a point's command may fork (a --prompt-len prefill runs in a child),
    // and a timeout or an interrupt signals the whole group, never leaving a grandchild running.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, argv.at(0).c_str(), &actions, &attributes, args.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw Error(fmt::format("cannot start `{}`: {}", argv[0], std::strerror(rc)));
    return Child(pid);
}

std::optional<Ended> Child::poll() {
    if (ended_) return ended_;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) return std::nullopt;
    if (r < 0) throw Error(fmt::format("cannot wait for process {}: {}", pid_, std::strerror(errno)));
    ended_ = ended(status);
    return ended_;
}

Ended Child::wait() {
    if (ended_) return *ended_;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0)
        if (errno != EINTR)
            throw Error(fmt::format("cannot wait for process {}: {}", pid_, std::strerror(errno)));
    ended_ = ended(status);
    return *ended_;
}

void Child::kill(int signal) const {
    if (ended_) return;                                   // reaped: its id may be another process's now
    if (::kill(-pid_, signal) != 0) ::kill(pid_, signal); // its group (spawn made one), else itself
}

} // namespace cardsim::cli::sweep
