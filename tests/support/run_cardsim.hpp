#pragma once
// Running the cardsim executable from a test, as a user would.

#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <sys/wait.h>

namespace cardsim::test {

/// What running `cardsim ARGS` printed (stdout and stderr together) and its exit code.
struct Ran {
    std::string out;
    int code = -1;
};

/// Runs `cardsim ARGS` through the shell (ARGS is shell text) and waits for it.
inline Ran run_cardsim(const std::string& args) {
    std::string cmd = std::string(CARDSIM_BINARY) + " " + args + " 2>&1";
    Ran r;
    std::FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::array<char, 4096> buf{};
    while (auto n = std::fread(buf.data(), 1, buf.size(), p))
        r.out.append(buf.data(), n);
    int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

/// Whether `s` contains `part`.
inline bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}

} // namespace cardsim::test
