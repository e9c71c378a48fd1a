// `cardsim ddr gen` and `cardsim ddr replay` end to end, through the executable.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
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

namespace {

/// What a command printed less its host timing line (which differs from run to run).
std::string without_host(const std::string& out) {
    std::string kept;
    std::size_t at = 0;
    while (at < out.size()) {
        const std::size_t end = std::min(out.find('\n', at), out.size());
        if (out.compare(at, 5, "host ") != 0) kept.append(out, at, end + 1 - at);
        at = end + 1;
    }
    return kept;
}

std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// `cardsim ARGS` must exit 2 with a message holding `message`.
void refused(const std::string& args, const std::string& message) {
    auto [rc, out] = run(args);
    INFO(args << "\n" << out);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains(message));
}

/// The trace `ddr gen ARGS -o PATH` writes.
std::string generated(const std::filesystem::path& path, const std::string& args) {
    auto [rc, out] = run(fmt::format("ddr gen {} -o {}", args, path.string()));
    INFO(out);
    REQUIRE(rc == 0);
    return slurp(path);
}

} // namespace

TEST_CASE("ddr gen refuses an option its pattern does not use, naming it", "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-gen-pattern");
    const auto out = (dir / "refused.trace").string();
    refused("ddr gen sequential --streams 7 -o " + out,
            "--streams 7: only the streams pattern runs several streams, so it does nothing to a sequential "
            "trace; leave it out, or generate streams");
    refused("ddr gen sequential --spacing 1M -o " + out, "--spacing 1M: only the streams pattern");
    refused("ddr gen sequential --seed 99 -o " + out,
            "--seed 99: only the random pattern draws its addresses from a seed, so it does nothing to a "
            "sequential trace");
    refused("ddr gen random --stride 4096 -o " + out,
            "--stride 4096: the random pattern draws addresses aligned to --size and has no stride");
    refused("ddr gen random --streams 7 -o " + out, "--streams 7: only the streams pattern");
    refused("ddr gen random --spacing 1M -o " + out, "--spacing 1M: only the streams pattern");
    refused("ddr gen mix --seed 5 -o " + out, "--seed 5: only the random pattern");
    refused("ddr gen mix --streams 3 -o " + out, "--streams 3: only the streams pattern");
    refused("ddr gen mix --spacing 1M -o " + out, "--spacing 1M: only the streams pattern");
    refused("ddr gen streams --seed 5 -o " + out, "--seed 5: only the random pattern");
    CHECK(!std::filesystem::exists(out));
    // Where the pattern reads them, they still change the trace.
    const auto a = dir / "a", b = dir / "b";
    CHECK(generated(a, "streams --count 64") != generated(b, "streams --count 64 --streams 7"));
    CHECK(generated(a, "streams --count 64") != generated(b, "streams --count 64 --spacing 1M"));
    CHECK(generated(a, "random --count 64") != generated(b, "random --count 64 --seed 99"));
    CHECK(generated(a, "sequential --count 64") != generated(b, "sequential --count 64 --stride 4096"));
    CHECK(generated(a, "mix --count 64") != generated(b, "mix --count 64 --stride 4096"));
    CHECK(generated(a, "streams --count 64") != generated(b, "streams --count 64 --stride 4096"));
}

TEST_CASE("ddr gen refuses a trace clock option its format does not use, naming it", "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-gen-format");
    const auto out = (dir / "refused.trace").string();
    refused("ddr gen sequential --request-bytes 256 -o " + out,
            "--request-bytes 256: a cardsim trace carries each request's length, so it does nothing here");
    refused("ddr gen sequential --gap 5 --player-mhz 7 -o " + out,
            "--player-mhz 7: cardsim trace times are picoseconds, so it does nothing here");
    refused("ddr gen sequential --format dramsim3 --gap 5 --player-mhz 7 -o " + out,
            "--player-mhz 7: dramsim3 trace times are cycles of the memory clock, so it does nothing here");
    refused("ddr gen sequential --format dramsys --player-mhz 7 -o " + out,
            "--player-mhz 7: without --gap every request is at cycle 0");
    CHECK(!std::filesystem::exists(out));
    // Where the format reads them, they still change the trace.
    const auto a = dir / "a", b = dir / "b";
    CHECK(generated(a, "sequential --count 64 --size 128 --format dramsim3") !=
          generated(b, "sequential --count 64 --size 128 --format dramsim3 --request-bytes 32"));
    CHECK(generated(a, "sequential --count 64 --format dramsys") !=
          generated(b, "sequential --count 64 --format dramsys --request-bytes 128"));
    CHECK(generated(a, "sequential --count 64 --format dramsys --gap 5") !=
          generated(b, "sequential --count 64 --format dramsys --gap 5 --player-mhz 7"));
}

TEST_CASE("ddr replay refuses --player-mhz and --request-bytes where the trace does not use them, naming "
          "them",
          "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-replay-clocks");
    const auto cardsim_trace = (dir / "t.cardsim").string();
    const auto ds3 = (dir / "t.ds3").string();
    const auto stl = (dir / "t.stl").string();
    REQUIRE(run("ddr gen sequential --count 256 --gap 5 -o " + cardsim_trace).first == 0);
    REQUIRE(run("ddr gen sequential --count 256 --gap 5 --format dramsim3 -o " + ds3).first == 0);
    REQUIRE(run("ddr gen sequential --count 256 --gap 5 --format dramsys -o " + stl).first == 0);
    refused("ddr replay " + cardsim_trace + " --request-bytes 128",
            "--request-bytes 128: a cardsim trace carries each request's length, so it does nothing here");
    refused("ddr replay " + cardsim_trace + " --player-mhz 50 --pace timed",
            "--player-mhz 50: cardsim trace times are picoseconds, so it does nothing here");
    refused("ddr replay " + ds3 + " --pace timed --player-mhz 50",
            "--player-mhz 50: dramsim3 trace times are cycles of the memory clock, so it does nothing here");
    refused("ddr replay " + stl + " --player-mhz 50",
            "--player-mhz 50: closed pacing sends each request as the model accepts it");
    refused("ddr replay " + stl + " --pace closed --player-mhz 50", "--player-mhz 50: closed pacing");
    // Where they are used they still change the replay: a DRAMSys trace's times under timed pacing,
    // a DRAMSys export's cycles, DRAMSim3 and DRAMSys requests' sizes.
    const auto summary = [](const std::string& args) {
        auto [rc, out] = run(args);
        INFO(args << "\n" << out);
        REQUIRE(rc == 0);
        return without_host(out);
    };
    CHECK(summary("ddr replay " + stl + " --pace timed") !=
          summary("ddr replay " + stl + " --pace timed --player-mhz 50"));
    CHECK(summary("ddr replay " + ds3) != summary("ddr replay " + ds3 + " --request-bytes 128"));
    CHECK(summary("ddr replay " + stl) != summary("ddr replay " + stl + " --request-bytes 128"));
    const auto x = dir / "x.stl", y = dir / "y.stl";
    summary(
        fmt::format("ddr replay {} --ddr-trace {} --ddr-trace-format dramsys", cardsim_trace, x.string()));
    summary(fmt::format("ddr replay {} --ddr-trace {} --ddr-trace-format dramsys --player-mhz 50",
                        cardsim_trace, y.string()));
    CHECK(slurp(x) != slurp(y));
}

TEST_CASE("ddr replay honours the user port's width and clock with --user-port and refuses them without",
          "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-replay-port");
    const auto trace = (dir / "t.cardsim").string();
    REQUIRE(run("ddr gen sequential --count 4096 -o " + trace).first == 0);
    refused(fmt::format("ddr replay {} --set ddr.port_bits=128", trace),
            "ddr.port_bits = 128: it sets the card's user port");
    refused(fmt::format("ddr replay {} --set clock.kernel_mhz=100", trace),
            "clock.kernel_mhz = 100: it sets the card's user port");
    // However they are given: a config file, a --set of their table.
    const auto file = (dir / "port.toml").string();
    std::ofstream(file) << "[ddr]\nport_bits = 128\n";
    refused(fmt::format("ddr replay {} --config {}", trace, file),
            "ddr.port_bits = 128: it sets the card's user port");
    refused(fmt::format("ddr replay {} --set 'clock={{kernel_mhz=100.0}}'", trace),
            "clock.kernel_mhz = 100: it sets the card's user port");
    // Through the port, a narrower or slower one reads the stream more slowly.
    const auto time = [&](const std::string& extra) {
        auto [rc, out] = run(fmt::format("ddr replay {} --user-port {}", trace, extra));
        INFO(out);
        REQUIRE(rc == 0);
        const auto at = out.find("simulated time");
        REQUIRE(at != std::string::npos);
        return std::stod(out.substr(at + 15));
    };
    const double full = time("");
    CHECK(time("--set ddr.port_bits=128") > 3 * full);
    CHECK(time("--set clock.kernel_mhz=100") > 2 * full);
}

TEST_CASE("ddr replay refuses --channels together with --set ddr.channels, naming both", "[ddr][cli]") {
    const cardsim::test::ScratchDir dir("ddr-replay-channels");
    const auto trace = (dir / "t.cardsim").string();
    REQUIRE(run("ddr gen sequential --count 64 -o " + trace).first == 0);
    refused("ddr replay " + trace + " --channels 2 --set ddr.channels=1",
            "--channels 2 and --set ddr.channels=1 both give the channel count; give one of them");
    refused("ddr replay " + trace + " --set ddr.channels=2 --channels 2",
            "--channels 2 and --set ddr.channels=2 both give the channel count");
    // Either alone is taken.
    for (const char* option : {"--channels 2", "--set ddr.channels=2"}) {
        auto [rc, out] = run(fmt::format("ddr replay {} {}", trace, option));
        INFO(out);
        CHECK(rc == 0);
        CHECK_THAT(out, Catch::Contains("2 x DDR4-2400 channels"));
    }
}
