#pragma once
// Running part of a test in a child process: SystemC elaborates one simulation per process, so a
// test that compares two simulations runs one of them in a child.

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace cardsim::test {

/// Runs `f` in a forked child (before this process elaborates anything) and returns the numbers it
/// produced; fails the test when the child does not exit cleanly.
inline std::vector<std::uint64_t> in_child(const std::function<std::vector<std::uint64_t>()>& f) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        int code = 0;
        try {
            auto v = f();
            std::uint64_t n = v.size();
            if (::write(fds[1], &n, sizeof n) != sizeof n) code = 3;
            for (auto x : v)
                if (::write(fds[1], &x, sizeof x) != sizeof x) code = 3;
        } catch (...) {
            code = 4;
        }
        ::close(fds[1]);
        ::_exit(code);
    }
    ::close(fds[1]);
    std::vector<std::uint64_t> out;
    std::uint64_t n = 0;
    if (::read(fds[0], &n, sizeof n) == sizeof n) {
        out.resize(n);
        for (auto& x : out)
            if (::read(fds[0], &x, sizeof x) != sizeof x) break;
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return out;
}

} // namespace cardsim::test
