// `cardsim ddr gen` and `cardsim ddr replay` end to end, through the executable.

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

/// Runs `cardsim ARGS`, returning the exit code and what it printed (stdout and stderr).
std::pair<int, std::string> cardsim(const std::string& args) {
    static int n = 0;
    const auto out =
        std::filesystem::temp_directory_path() / fmt::format("cardsim_ddr_cli_{}_{}.out", getpid(), n++);
    const int status =
        std::system(fmt::format("{} {} > {} 2>&1", CARDSIM_BINARY, args, out.string()).c_str());
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove(out);
    return {WEXITSTATUS(status), text.str()};
}

std::filesystem::path temp(const char* name) {
    return std::filesystem::temp_directory_path() / fmt::format("cardsim_ddr_cli_{}_{}", getpid(), name);
}

} // namespace

TEST_CASE("ddr gen writes each format and ddr replay reads it back", "[ddr][cli]") {
    for (const char* format : {"dramsim3", "dramsys", "cardsim"}) {
        const auto trace = temp(format);
        auto [gen_rc, gen_out] = cardsim(
            fmt::format("ddr gen sequential --count 20000 --format {} -o {}", format, trace.string()));
        INFO(gen_out);
        REQUIRE(gen_rc == 0);
        auto [rc, out] = cardsim(fmt::format("ddr replay {} --format {}", trace.string(), format));
        INFO(out);
        CHECK(rc == 0);
        CHECK_THAT(out, Catch::Contains("requests        20000 (20000 reads, 0 writes)"));
        CHECK_THAT(out, Catch::Contains("total"));
        CHECK_THAT(out, Catch::Contains("read latency    mean"));
        CHECK_THAT(out, Catch::Contains("refresh"));
        CHECK_THAT(out, Catch::Contains("M requests per host second"));
        auto [auto_rc, auto_out] =
            cardsim(fmt::format("ddr replay {} --channels 2 --pace timed", trace.string()));
        CHECK(auto_rc == 0);
        CHECK_THAT(auto_out, Catch::Contains(fmt::format("({},", format)));
        CHECK_THAT(auto_out, Catch::Contains("2 x DDR4-2400 channels, frfcfs scheduler, timed pacing"));
        std::filesystem::remove(trace);
    }
}

TEST_CASE("ddr replay and gen turn bad input into exit code 2 and a message naming it", "[ddr][cli]") {
    const auto trace = temp("bad.trace");
    std::ofstream(trace) << "cardsim-ddr 1\nR 40\nR zz\n";
    auto [rc, out] = cardsim(fmt::format("ddr replay {}", trace.string()));
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains(trace.string() + ":3: expected a hexadecimal address"));
    std::filesystem::remove(trace);
    auto [rc2, out2] = cardsim("ddr replay /nonexistent.trace --set ddr.chanels=2");
    CHECK(rc2 == 2);
    CHECK_THAT(out2, Catch::Contains("--set ddr.chanels=2: unknown key `ddr.chanels`"));
    auto [rc3, out3] = cardsim("ddr gen zigzag -o /tmp/x");
    CHECK(rc3 == 2);
    CHECK_THAT(out3, Catch::Contains("expected sequential, random, streams or mix"));
    auto [rc4, out4] = cardsim("ddr gen random --span 1T -o /tmp/x");
    CHECK(rc4 == 2);
    CHECK_THAT(out4, Catch::Contains("--span 1T: expected a byte count"));
}
