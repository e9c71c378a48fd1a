// Bounded host resources (issue 16): a long timing-only run's peak memory does not grow with its
// steps (it grew by ~32 KB a step: every command's record and every step's inputs were kept), and
// a run reserves host address space for what its program's regions span, not the card's 32 GiB of
// DDR, so it starts under a `ulimit -v` of a shared cluster.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/skip.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// Runs cardsim with `args` (output discarded) and returns its peak resident memory in KiB.
long peak_kib(const std::vector<std::string>& args) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::vector<char*> argv{const_cast<char*>(CARDSIM_BINARY)};
        for (auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        std::freopen("/dev/null", "w", stdout);
#ifdef CARDSIM_SANITIZED
        // AddressSanitizer keeps freed memory in a quarantine (256 MB) that would grow the peak with
        // every allocation, given back or not: without it the peak measures what the run holds.
        std::string options = "quarantine_size_mb=0:thread_local_quarantine_size_kb=0:";
        if (auto* given = std::getenv("ASAN_OPTIONS")) options += given;
        ::setenv("ASAN_OPTIONS", options.c_str(), 1);
#endif
        ::execv(CARDSIM_BINARY, argv.data());
        ::_exit(127);
    }
    int status = 0;
    rusage usage{};
    REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return usage.ru_maxrss;
}

} // namespace

TEST_CASE("a long timing-only run's host memory does not grow with its steps") {
    const ScratchDir d("resources-steps");
    auto m = (d / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 1 -o " + m).code == 0);
    auto run = [&](int tokens) {
        return peak_kib({"run", m, "--tokens", std::to_string(tokens), "--timing-only"});
    };
    const long short_run = run(500), long_run = run(5500);
    INFO("peak " << short_run << " KiB over 500 tokens, " << long_run << " KiB over 5500");
    // 5000 more steps: under 1 KiB a step (the caches grow by positions: a few bytes a step here).
    CHECK(long_run - short_run < 5000);
}

TEST_CASE("a run reserves address space for its program's regions, not the card's whole DDR") {
#ifdef CARDSIM_SANITIZED
    CARDSIM_SKIP("AddressSanitizer reserves terabytes of shadow address space, so no run starts under "
                 "ulimit -v");
#endif
    const ScratchDir d("resources-ulimit");
    auto m = (d / "m").string();
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --seed 1 -o " + m).code == 0);
    // 2 GiB of address space: far below the default card's 32 GiB of DDR.
    auto cmd = "bash -c 'ulimit -v 2097152; exec " + std::string(CARDSIM_BINARY) + " run " + m +
               " --tokens 2 --no-reference' 2>&1";
    std::FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::string out;
    char buf[4096];
    while (auto n = std::fread(buf, 1, sizeof buf, p))
        out.append(buf, n);
    int status = ::pclose(p);
    INFO(out);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(contains(out, "bit-exact: yes"));
}
