// `cardsim run --ddr-trace` and `cardsim ddr replay --ddr-trace`, as a user runs them: the DDR
// requests of a compiled decode step, exported in each format (all channels, or one), replay in
// `cardsim ddr replay --pace timed` to the DDR time and row outcomes the card run printed; formats
// convert both ways through replay; bad options are refused naming the option.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
using cardsim::test::slurp;

namespace {

/// A DDR time and row outcomes, as `run` and `replay` print them.
struct DdrFigures {
    std::uint64_t cycles = 0, hits = 0, misses = 0, conflicts = 0;
    friend bool operator==(const DdrFigures&, const DdrFigures&) = default;
};

std::uint64_t number(const std::smatch& m, std::size_t i) {
    return std::stoull(m[static_cast<int>(i)].str());
}

/// What `cardsim run --ddr-trace` printed of the exported channels.
DdrFigures run_figures(const std::string& out) {
    static const std::regex re(
        R"(DDR time (\d+) memory cycles .*row hits (\d+) misses (\d+) conflicts (\d+))");
    std::smatch m;
    REQUIRE(std::regex_search(out, m, re));
    return {number(m, 1), number(m, 2), number(m, 3), number(m, 4)};
}

/// What `cardsim ddr replay` printed: its simulated time and its row buffer line.
DdrFigures replay_figures(const std::string& out) {
    static const std::regex time(R"(simulated time .*\((\d+) memory cycles at)");
    static const std::regex rows(
        R"(row buffer +(\d+) hits \([^)]*\), (\d+) misses \([^)]*\), (\d+) conflicts)");
    std::smatch t, r;
    REQUIRE(std::regex_search(out, t, time));
    REQUIRE(std::regex_search(out, r, rows));
    return {number(t, 1), number(r, 1), number(r, 2), number(r, 3)};
}

/// A small hybrid checkpoint compiled for one prompt token and one generated token.
std::string compiled_program(const ScratchDir& d) {
    const auto m = (d / "model").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size small --seed 3 -o " + m).code == 0);
    const auto prog = (d / "p.cardsim").string();
    REQUIRE(run_cardsim("compile " + m + " --max-positions 2 -o " + prog).code == 0);
    return prog;
}

} // namespace

TEST_CASE("an exported decode step replays to the card run's DDR time and row outcomes in each format",
          "[ddr][cli]") {
    const ScratchDir d("ddr-trace-roundtrip");
    const auto prog = compiled_program(d);
    for (const char* format : {"cardsim", "dramsim3", "dramsys"}) {
        for (const char* channel : {"all", "1"}) {
            const auto trace = (d / fmt::format("{}-{}.trace", format, channel)).string();
            const auto ran = run_cardsim(
                fmt::format("run {} --prompt 1 --tokens 1 --timing-only --ddr-trace {} --ddr-trace-format {} "
                            "--ddr-trace-channel {}",
                            prog, trace, format, channel));
            INFO(ran.out);
            REQUIRE(ran.code == 0);
            const DdrFigures card = run_figures(ran.out);
            CHECK(card.hits > 1000);
            CHECK(card.misses > 0);
            CHECK(card.conflicts > 0);
            CHECK_FALSE(std::filesystem::exists(trace + ".partial"));
            const bool one = std::string(channel) != "all";
            const auto replayed = run_cardsim(
                fmt::format("ddr replay {} --format {} --pace timed --outstanding 0 --user-port {}", trace,
                            format, one ? "--channels 1" : ""));
            INFO(replayed.out);
            REQUIRE(replayed.code == 0);
            CHECK(replay_figures(replayed.out) == card);
            // As the card's units hand requests over (blocking transport), the same.
            const auto blocking = run_cardsim(fmt::format(
                "ddr replay {} --format {} --pace timed --outstanding 0 --blocking --user-port {}", trace,
                format, one ? "--channels 1" : ""));
            REQUIRE(blocking.code == 0);
            CHECK(replay_figures(blocking.out) == card);
        }
    }
}

TEST_CASE("ddr replay converts a trace between the formats both ways", "[ddr][cli]") {
    const ScratchDir d("ddr-trace-convert");
    const auto prog = compiled_program(d);
    const auto original = (d / "run.cardsim").string();
    REQUIRE(
        run_cardsim("run " + prog + " --prompt 1 --tokens 1 --timing-only --ddr-trace " + original).code ==
        0);
    // cardsim -> dramsys -> cardsim gives the original file back, byte for byte: both formats carry
    // lengths and exact memory-clock times.
    const auto stl = (d / "run.stl").string();
    const auto back = (d / "back.cardsim").string();
    auto to_stl = run_cardsim(
        fmt::format("ddr replay {} --pace timed --outstanding 0 --ddr-trace {} --ddr-trace-format dramsys",
                    original, stl));
    INFO(to_stl.out);
    REQUIRE(to_stl.code == 0);
    auto to_cardsim = run_cardsim(
        fmt::format("ddr replay {} --format dramsys --pace timed --outstanding 0 --ddr-trace {}", stl, back));
    INFO(to_cardsim.out);
    REQUIRE(to_cardsim.code == 0);
    CHECK(slurp(back) == slurp(original));
    CHECK(slurp(stl) != slurp(original));
    // DRAMSim3 has no lengths: converted there and back, the replay still ends at the same time
    // with the same row outcomes.
    const auto ds3 = (d / "run.ds3").string();
    REQUIRE(run_cardsim(fmt::format("ddr replay {} --pace timed --outstanding 0 --ddr-trace {} "
                                    "--ddr-trace-format dramsim3",
                                    original, ds3))
                .code == 0);
    const auto a = run_cardsim("ddr replay " + original + " --pace timed --outstanding 0");
    const auto b = run_cardsim("ddr replay " + ds3 + " --format dramsim3 --pace timed --outstanding 0");
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(replay_figures(a.out) == replay_figures(b.out));
}

TEST_CASE("bad ddr trace options are refused naming the option", "[ddr][cli]") {
    const ScratchDir d("ddr-trace-bad");
    const auto trace = (d / "t.cardsim").string();
    REQUIRE(run_cardsim("ddr gen sequential --count 100 -o " + trace).code == 0);
    const auto base = "ddr replay " + trace + " --ddr-trace " + (d / "out").string();
    const std::array<std::pair<std::string, std::string>, 4> cases{{
        {" --ddr-trace-format ramulator",
         "--ddr-trace-format ramulator: expected cardsim, dramsim3 or dramsys"},
        {" --ddr-trace-channel 4", "--ddr-trace-channel 4: expected all or a channel 0 to 3"},
        {" --ddr-trace-channel one", "--ddr-trace-channel one: expected all or a channel 0 to 3"},
        {" --ddr-trace-bytes 0", "--ddr-trace-bytes 0: expected at least 1 byte"},
    }};
    for (const auto& [option, message] : cases) {
        const auto r = run_cardsim(base + option);
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK_THAT(r.out, Catch::Contains(message));
    }
    const auto alone = run_cardsim("ddr replay " + trace + " --ddr-trace-channel 1");
    CHECK(alone.code == 2);
    CHECK_THAT(alone.out, Catch::Contains("--ddr-trace-channel without --ddr-trace FILE"));
    const auto onto = run_cardsim("ddr replay " + trace + " --ddr-trace " + trace);
    CHECK(onto.code == 2);
    CHECK_THAT(onto.out, Catch::Contains("the trace being replayed"));
    CHECK(d.files() == std::vector<std::string>{"t.cardsim"});
}
