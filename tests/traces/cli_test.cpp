// `cardsim trace show|diff|bless` run as a user would: output and exit codes.

#include "engine/io/atomic_file.hpp"
#include "fixtures.hpp"
#include "traces/reader.hpp"
#include "traces/vcd.hpp"
#include "traces/writer.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <sstream>
#include <sys/wait.h>

using namespace cardsim::traces;
namespace io = cardsim::io;
using namespace cardsim::traces::testing;

namespace {

/// The exit code and standard output of `cardsim ARGS` (standard error goes to `err`).
struct Run {
    int code = -1;
    std::string out, err;
};

Run cardsim_run(const ScratchDir& dir, const std::string& args) {
    auto out = dir / "stdout.txt", err = dir / "stderr.txt";
    auto command = fmt::format("'{}' {} >'{}' 2>'{}'", CARDSIM_BINARY, args, out.string(), err.string());
    int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    Run r{WEXITSTATUS(status), io::read_file(out), io::read_file(err)};
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
}

std::string q(const std::filesystem::path& p) {
    return fmt::format("'{}'", p.string());
}

} // namespace

TEST_CASE("cardsim trace diff exits 0 when traces agree and 1 when they differ and 2 on a bad file",
          "[traces][cli]") {
    ScratchDir dir("traces");
    auto a = sample_trace();
    auto b = a;
    b.records[3].end = b.records[3].start + b.records[3].duration() * 11 / 10;
    write_trace(dir / "a.trace", a);
    write_trace(dir / "a2.trace", a);
    write_trace(dir / "b.trace", b);
    io::write_file_atomically(dir / "bad.trace", "cardsim-trace 9\n");

    auto same = cardsim_run(dir, "trace diff " + q(dir / "a.trace") + " " + q(dir / "a2.trace"));
    CHECK(same.code == 0);
    CHECK_THAT(same.out, Catch::Contains("traces agree"));

    auto differ =
        cardsim_run(dir, "trace diff " + q(dir / "a.trace") + " " + q(dir / "b.trace") + " --cycles-tol 5");
    CHECK(differ.code == 1);
    CHECK_THAT(differ.out, Catch::StartsWith("traces differ: 1 command with durations over 5%") &&
                               Catch::Contains("attention/attention"));

    auto tolerated =
        cardsim_run(dir, "trace diff " + q(dir / "a.trace") + " " + q(dir / "b.trace") + " --cycles-tol 15");
    CHECK(tolerated.code == 0);

    auto bad = cardsim_run(dir, "trace diff " + q(dir / "a.trace") + " " + q(dir / "bad.trace"));
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("bad.trace:1:") && Catch::Contains("version 9 is not supported"));

    CHECK(cardsim_run(dir, "trace diff " + q(dir / "a.trace")).code == 2);
    CHECK(
        cardsim_run(dir, "trace diff " + q(dir / "a.trace") + " " + q(dir / "a2.trace") + " --cycles-tol -1")
            .code == 2);
    CHECK(cardsim_run(dir, "trace frobnicate").code == 2);
    for (std::string bad_option : {std::string("--format xml"), std::string("--top -1"),
                                   std::string("--start-tol -1"), "--program " + q(dir / "a.trace")})
        CHECK(cardsim_run(dir,
                          "trace diff " + q(dir / "a.trace") + " " + q(dir / "a2.trace") + " " + bad_option)
                  .code == 2);
    // Starts are compared only with --start-tol: a later start alone is within any cycle tolerance.
    auto shifted = a;
    for (auto& r : shifted.records) {
        r.start += 7;
        r.end += 7;
    }
    shifted.records.back().end -= 7; // the last end, hence the total, stays
    shifted.records.back().start -= 7;
    write_trace(dir / "shifted.trace", shifted);
    auto starts = "trace diff " + q(dir / "a.trace") + " " + q(dir / "shifted.trace");
    CHECK(cardsim_run(dir, starts).code == 0);
    CHECK(cardsim_run(dir, starts + " --start-tol 0").code == 1);
}

TEST_CASE("cardsim trace show prints the summary or writes the exports", "[traces][cli]") {
    ScratchDir dir("traces");
    write_trace(dir / "a.trace", sample_trace());
    auto summary = cardsim_run(dir, "trace show " + q(dir / "a.trace"));
    CHECK(summary.code == 0);
    CHECK_THAT(summary.out, Catch::Contains("commands: 8 (indices 0 to 8)"));
    CHECK_THAT(summary.out, Catch::Contains("cycles: 9500"));
    // matvec is busy over [120, 5400) and [5500, 9500) (two commands overlapping): 5280 + 4000 cycles.
    auto at = summary.out.find("\nmatvec ");
    REQUIRE(at != std::string::npos);
    auto row = summary.out.substr(at + 1, summary.out.find('\n', at + 1) - at - 1);
    std::istringstream fields(row);
    std::string unit;
    std::uint64_t commands = 0, busy = 0;
    fields >> unit >> commands >> busy;
    CHECK(commands == 3);
    CHECK(busy == 9280);

    auto exported = cardsim_run(dir, "trace show " + q(dir / "a.trace") + " --csv " + q(dir / "a.csv") +
                                         " --perfetto " + q(dir / "a.json"));
    CHECK(exported.code == 0);
    auto csv = io::read_file(dir / "a.csv");
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 9);
    CHECK(boost::json::parse(io::read_file(dir / "a.json")).is_object());
}

TEST_CASE("cardsim trace bless prints the diff and installs the new trace", "[traces][cli]") {
    ScratchDir dir("traces");
    auto fresh = sample_trace();
    fresh.records[0].read += 1;
    write_trace(dir / "golden.trace", sample_trace());
    write_trace(dir / "new.trace", fresh);
    auto r = cardsim_run(dir, "trace bless " + q(dir / "new.trace") + " " + q(dir / "golden.trace"));
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("shape: command 0: read A 4096 vs B 4097"));
    CHECK_THAT(r.out, Catch::Contains("blessed"));
    CHECK(read_trace(dir / "golden.trace") == fresh);
}

namespace {

/// A golden trace of the repository (a real run, with the card, summary and shim in its meta).
std::string golden(const std::string& name) {
    return q(std::filesystem::path(CARDSIM_SOURCE_DIR) / "traces" / "golden" / (name + ".trace"));
}

/// The bytes of the lines of `text` that start with `prefix`.
std::size_t bytes_of_lines(const std::string& text, std::string_view prefix) {
    std::size_t n = 0, at = 0;
    while (at < text.size()) {
        auto nl = std::min(text.find('\n', at), text.size());
        if (std::string_view(text).substr(at, nl - at).starts_with(prefix)) n += nl - at + 1;
        at = nl + 1;
    }
    return n;
}

} // namespace

TEST_CASE("trace show of a real run prints its meta readably: summarised, or whole with --meta",
          "[traces][cli][meta]") {
    ScratchDir dir("show-meta");
    auto r = cardsim_run(dir, "trace show " + golden("hybrid-sub32"));
    REQUIRE(r.code == 0);
    CHECK_FALSE(Catch::contains(r.out, "\\x0a"));
    CHECK_THAT(r.out, Catch::Contains("meta run.card: "));
    CHECK_THAT(r.out, Catch::Contains("meta run.summary: a JSON object of "));
    CHECK_THAT(r.out, Catch::Contains("meta run.model = hybrid decoder (qwen3_5)\n"));
    // The meta is a small part of the output; the figures are the rest.
    CHECK(bytes_of_lines(r.out, "meta ") * 5 < r.out.size());
    CHECK_THAT(r.out, Catch::Contains("\nmatvec "));

    auto whole = cardsim_run(dir, "trace show --meta " + golden("hybrid-sub32"));
    REQUIRE(whole.code == 0);
    CHECK_FALSE(Catch::contains(whole.out, "\\x0a"));
    CHECK_THAT(whole.out, Catch::Contains("meta run.card:\n    clock.kernel_mhz = 300.0\n"));
    CHECK_THAT(whole.out, Catch::Contains("meta run.summary:\n    {\n      \"program\": null,\n"));
    // Every line reads on a terminal.
    std::istringstream lines(whole.out);
    for (std::string line; std::getline(lines, line);)
        CHECK(line.size() <= 400);
}

TEST_CASE("trace diff of two real runs leads with its findings and names the meta keys that differ in a "
          "line each",
          "[traces][cli][meta]") {
    ScratchDir dir("diff-meta");
    auto r = cardsim_run(dir, "trace diff " + golden("hybrid-sub32") + " " + golden("hybrid-perblock"));
    REQUIRE(r.code == 1);
    CHECK_FALSE(Catch::contains(r.out, "\\x0a"));
    const auto notes = r.out.find("\nnote: ");
    REQUIRE(notes != std::string::npos);
    for (auto finding : {"total: ", "config: numerics.scaling", "durations over", "shape: "})
        CHECK(r.out.find(finding) < notes);
    CHECK_THAT(r.out, Catch::Matches(
                          "[^]*\nnote: meta run.card: [0-9]+ of [0-9]+ lines differ; the first, line [0-9]+: "
                          "A `numerics.scaling = \"sub32\"`, B `numerics.scaling = \"per_block\"`\n[^]*"));
    CHECK_THAT(r.out, Catch::Contains("note: meta run.summary: members "));
    // The notes are a few short lines after the findings.
    CHECK(bytes_of_lines(r.out, "note: ") * 10 < r.out.size());
    std::istringstream lines(r.out.substr(notes + 1));
    for (std::string line; std::getline(lines, line);)
        CHECK(line.size() <= 200);
}

TEST_CASE("trace show --vcd writes the VCD of a trace", "[traces][cli]") {
    ScratchDir dir("show-vcd");
    auto r = cardsim_run(dir, "trace show " + golden("dense-sub32") + " --vcd " + q(dir / "t.vcd"));
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("wrote "));
    auto t =
        read_trace(std::filesystem::path(CARDSIM_SOURCE_DIR) / "traces" / "golden" / "dense-sub32.trace");
    CHECK(io::read_file(dir / "t.vcd") == to_vcd(t));
}
