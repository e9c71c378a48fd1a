// `cardsim --version`: the version, the commit, the build type and the library versions the binary
// was built with, each the one this build really used.

#include "sim/rtl/rtl_matvec.hpp"
#include "tests/support/run_cardsim.hpp"

#include <boost/version.hpp>
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <sysc/kernel/sc_ver.h>

#include <map>
#include <sstream>

using cardsim::test::run_cardsim;

namespace {

/// The `key: value` lines of `cardsim --version` after its first line.
std::map<std::string, std::string> facts(const std::string& out) {
    std::map<std::string, std::string> kv;
    std::istringstream in(out);
    std::string line;
    std::getline(in, line);
    kv["first"] = line;
    while (std::getline(in, line))
        if (auto colon = line.find(": "); colon != std::string::npos)
            kv[line.substr(0, colon)] = line.substr(colon + 2);
    return kv;
}

} // namespace

TEST_CASE("version_names_the_version_commit_build_type_and_the_libraries_built_with", "[cli][version]") {
    const auto ran = run_cardsim("--version");
    REQUIRE(ran.code == 0);
    auto kv = facts(ran.out);
    CHECK(kv["first"] == "cardsim " CARDSIM_PROJECT_VERSION);
    CHECK(kv["build type"] == CARDSIM_BUILD_TYPE);
    CHECK(kv["SystemC"] == fmt::format("{}.{}.{}", SC_VERSION_MAJOR, SC_VERSION_MINOR, SC_VERSION_PATCH));
    CHECK(kv["Boost"] ==
          fmt::format("{}.{}.{}", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100));
    if (cardsim::sim::rtl::rtl_available()) {
        CHECK(kv["Verilator"] == std::string(cardsim::sim::rtl::rtl_verilator_version()));
        CHECK(kv["Verilator"].find('.') != std::string::npos); // e.g. 5.006 2023-01-22
    } else {
        CHECK(kv["Verilator"] == "none");
    }
    // The commit is `unknown` outside git, else an object of the source tree's repository.
    const std::string commit = kv["commit"];
    REQUIRE(!commit.empty());
    if (commit != "unknown") {
        const std::string hash = commit.substr(0, commit.find('-'));
        CHECK(hash.size() >= 7);
        const std::string git =
            fmt::format("git -C '{}' cat-file -e '{}^{{commit}}' 2>/dev/null", CARDSIM_SOURCE_DIR, hash);
        CHECK(std::system(git.c_str()) == 0);
    }
}

TEST_CASE("version_is_listed_by_help", "[cli][version]") {
    const auto ran = run_cardsim("--help");
    CHECK(ran.code == 0);
    CHECK(cardsim::test::contains(ran.out, "cardsim --version"));
}
