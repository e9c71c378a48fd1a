// `cardsim ddr gen` and `cardsim ddr replay` end to end, through the executable.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

/// Runs `cardsim ARGS`, returning the exit code and what it printed (stdout and stderr).
std::pair<int, std::string> run(const std::string& args) {
    auto r = ::cardsim::test::run_cardsim(args);
    return {r.code, r.out};
}

} // namespace

TEST_CASE("ddr gen writes each format and ddr replay reads it back", "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-cli");
    for (const char* format : {"dramsim3", "dramsys", "cardsim"}) {
        const auto trace = dir / format;
        auto [gen_rc, gen_out] =
            run(fmt::format("ddr gen sequential --count 20000 --format {} -o {}", format, trace.string()));
        INFO(gen_out);
        REQUIRE(gen_rc == 0);
        auto [rc, out] = run(fmt::format("ddr replay {} --format {}", trace.string(), format));
        INFO(out);
        CHECK(rc == 0);
        CHECK_THAT(out, Catch::Contains("requests        20000 (20000 reads, 0 writes)"));
        CHECK_THAT(out, Catch::Contains("total"));
        CHECK_THAT(out, Catch::Contains("read latency    mean"));
        CHECK_THAT(out, Catch::Contains("refresh"));
        CHECK_THAT(out, Catch::Contains("M requests per host second"));
        auto [auto_rc, auto_out] =
            run(fmt::format("ddr replay {} --channels 2 --pace timed", trace.string()));
        CHECK(auto_rc == 0);
        CHECK_THAT(auto_out, Catch::Contains(fmt::format("({},", format)));
        CHECK_THAT(auto_out, Catch::Contains("2 x DDR4-2400 channels, frfcfs scheduler, timed pacing"));
    }
}

TEST_CASE("ddr replay and gen turn bad input into exit code 2 and a message naming it", "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-cli");
    const auto trace = dir / "bad.trace";
    std::ofstream(trace) << "cardsim-ddr 1\nR 40\nR zz\n";
    auto [rc, out] = run(fmt::format("ddr replay {}", trace.string()));
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains(trace.string() + ":3: expected a hexadecimal address"));
    auto [rc2, out2] = run("ddr replay /nonexistent.trace --set ddr.chanels=2");
    CHECK(rc2 == 2);
    CHECK_THAT(out2, Catch::Contains("--set ddr.chanels=2: unknown key `ddr.chanels`"));
    auto [rc3, out3] = run("ddr gen zigzag -o " + (dir / "x").string());
    CHECK(rc3 == 2);
    CHECK_THAT(out3, Catch::Contains("expected sequential, random, streams or mix"));
    auto [rc4, out4] = run("ddr gen random --span 1T -o " + (dir / "x").string());
    CHECK(rc4 == 2);
    CHECK_THAT(out4, Catch::Contains("--span 1T: expected a byte count"));
}
