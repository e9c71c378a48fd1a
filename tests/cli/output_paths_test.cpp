// Output paths are checked before any work: a path that is a folder, lies in a missing folder or
// cannot be written is bad input (exit 2) naming the option and the path, nothing runs, and no new
// file is left behind, for every command that writes.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// Every path under `dir`, recursively.
std::set<std::string> tree(const std::filesystem::path& dir) {
    std::set<std::string> names;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir))
        names.insert(e.path().string());
    return names;
}

/// The three bad places for an output in `dir`: a folder, a file in a missing folder, a file where
/// nothing can be made (/proc refuses new files, even to root).
std::vector<std::string> bad_outputs(const ScratchDir& dir) {
    std::filesystem::create_directories(dir / "a-folder");
    return {(dir / "a-folder").string(), (dir / "missing" / "out").string(), "/proc/cardsim-test-out"};
}

/// Runs `args` with `OUT` replaced by each bad output and requires exit 2 naming it, no simulation
/// or compile output, and nothing new under `dir`.
void refused_before_work(const ScratchDir& dir, const std::string& args, const std::string& option) {
    for (const auto& out : bad_outputs(dir)) {
        auto command = args;
        command.replace(command.find("OUT"), 3, out);
        const auto before = tree(dir.path());
        auto r = run_cardsim(command);
        INFO("cardsim " << command << "\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, option + " " + out));
        CHECK_FALSE(contains(r.out, "card: "));     // no run summary: nothing was simulated
        CHECK_FALSE(contains(r.out, "commands, ")); // nor compiled
        CHECK(tree(dir.path()) == before);
    }
}

} // namespace

TEST_CASE("run refuses every unwritable output before it loads or simulates anything") {
    ScratchDir d("out-run");
    const auto m = make_model(d, "dense");
    for (auto option : {"--trace", "--perfetto", "--vcd", "--csv", "--report", "--ddr-trace"})
        refused_before_work(d, "run " + m + " --tokens 2 " + option + " OUT", option);
}

TEST_CASE("run with several outputs writes none when one of them cannot be written") {
    ScratchDir d("out-run-several");
    const auto m = make_model(d, "dense");
    const auto before = tree(d.path());
    auto r = run_cardsim("run " + m + " --tokens 2 --trace " + (d / "t.trace").string() + " --csv " +
                         (d / "missing" / "t.csv").string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(tree(d.path()) == before);
}

TEST_CASE("a run whose last output fails to be written replaces none of the others") {
    ScratchDir d("out-run-stage");
    const auto m = make_model(d, "dense");
    const auto trace = d / "ex.trace", perfetto = d / "ex.json", ddr = d / "ex.ddr";
    std::ofstream(trace) << "OLD\n";
    std::ofstream(ddr) << "OLD\n";
    // Files over 100 KiB cannot be written (SIGXFSZ ignored: the write fails with EFBIG): the
    // trace (about 80 KB) is written whole, the Perfetto JSON (about 650 KB) after it is not.
    const std::string cmd = "trap '' XFSZ; ulimit -f 200; exec " + std::string(CARDSIM_BINARY) + " run " + m +
                            " --tokens 8 --trace " + trace.string() + " --perfetto " + perfetto.string() +
                            " --ddr-trace " + ddr.string() + " --ddr-trace-bytes 4096 2>&1";
    std::FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::string out;
    std::array<char, 4096> buf{};
    while (auto n = std::fread(buf.data(), 1, buf.size(), p))
        out.append(buf.data(), n);
    const int status = ::pclose(p);
    INFO(out);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(contains(out, perfetto.string()));
    std::ifstream in(trace);
    std::string line;
    std::getline(in, line);
    CHECK(line == "OLD"); // not replaced by the new trace
    std::ifstream ddr_in(ddr);
    std::getline(ddr_in, line);
    CHECK(line == "OLD"); // nor the DDR trace the simulation streamed
    CHECK_FALSE(std::filesystem::exists(perfetto));
    for (auto& e : std::filesystem::directory_iterator(d.path()))
        CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("a run refused after it compiled leaves none of the outputs it was asked for, and a user's file "
          "named like a temporary of one alone") {
    ScratchDir d("out-run-late");
    const auto m = make_model(d, "dense");
    std::ofstream(d / "t.trace.partial") << "mine\n";
    std::ofstream(d / "t.ddr.partial") << "mine too\n";
    const auto before = tree(d.path());
    // --flip-bit past the program is found after compiling, before simulating: nothing is left.
    auto r = run_cardsim("run " + m + " --tokens 2 --flip-bit 0:100000 --trace " + (d / "t.trace").string() +
                         " --ddr-trace " + (d / "t.ddr").string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(tree(d.path()) == before);
}

TEST_CASE("ddr gen leaves a user's file named like a temporary of its output alone") {
    ScratchDir d("out-ddr-partial");
    const auto ddr_mine = d / "t.ddr.partial";
    std::ofstream(ddr_mine) << "mine too\n";
    const auto before = tree(d.path());
    auto g = run_cardsim("ddr gen nope -o " + (d / "t.ddr").string());
    CHECK(g.code == 2);
    CHECK(tree(d.path()) == before);
    auto ok = run_cardsim("ddr gen random --count 10 -o " + (d / "t.ddr").string());
    CHECK(ok.code == 0);
    std::ifstream in(ddr_mine);
    std::string line;
    std::getline(in, line);
    CHECK(line == "mine too");
}

TEST_CASE("an output whose name is near the 255-byte limit is written, its temporaries fitting too") {
    ScratchDir d("out-long-name");
    const auto m = make_model(d, "dense");
    const std::string name = std::string(249, 'a') + ".trace"; // 255 bytes
    auto r = run_cardsim("run " + m + " --tokens 2 --trace " + (d / name).string());
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(std::filesystem::is_regular_file(d / name));
    const std::string ddr = std::string(251, 'b') + ".ddr";
    auto g = run_cardsim("ddr gen random --count 10 -o " + (d / ddr).string());
    INFO(g.out);
    CHECK(g.code == 0);
    CHECK(std::filesystem::is_regular_file(d / ddr));
    for (auto& e : std::filesystem::directory_iterator(d.path())) // no temporary left
        CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("trace show checks every export before reading the trace and leaves none new when one fails") {
    ScratchDir d("out-trace-show");
    const auto m = make_model(d, "dense");
    const auto trace = d / "t.trace";
    REQUIRE(run_cardsim("run " + m + " --tokens 2 --trace " + trace.string()).code == 0);
    const auto before = tree(d.path());
    auto r = run_cardsim("trace show " + trace.string() + " --csv " + (d / "new.csv").string() +
                         " --perfetto " + (d / "missing" / "x.json").string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(contains(r.out, "--perfetto " + (d / "missing" / "x.json").string()));
    CHECK(tree(d.path()) == before);
    refused_before_work(d, "trace show " + trace.string() + " --vcd OUT", "--vcd");
}

TEST_CASE("compile refuses an unwritable program path and leaves no image behind") {
    ScratchDir d("out-compile");
    const auto m = make_model(d, "dense");
    refused_before_work(d, "compile " + m + " -o OUT", "-o");
    // A refused model leaves neither the program nor its image.
    const auto moe = make_model(d, "hybrid-moe");
    const auto before = tree(d.path());
    auto r = run_cardsim("compile " + moe + " -o " + (d / "p.cardsim").string());
    CHECK(r.code == 1);
    CHECK(tree(d.path()) == before);
}

TEST_CASE("serve refuses unwritable tables and traces and leaves no temporary") {
    ScratchDir d("out-serve");
    const auto m = make_model(d, "dense");
    const auto requests = (d / "r.csv").string();
    std::ofstream(requests) << "arrival_s,prompt_tokens,output_tokens\n0,2,2\n";
    refused_before_work(d, "serve " + m + " --requests " + requests + " --table OUT", "--table");
    refused_before_work(d, "serve --gen poisson --count 3 -o OUT", "-o");
}

TEST_CASE("report, calibrate, ddr and sweep refuse unwritable outputs before any work") {
    ScratchDir d("out-others");
    const auto m = make_model(d, "dense");
    const auto trace = (d / "t.trace").string();
    REQUIRE(run_cardsim("run " + m + " --tokens 2 --trace " + trace).code == 0);
    refused_before_work(d, "report " + trace + " -o OUT", "-o");
    refused_before_work(d, "calibrate " + trace + " -o OUT", "-o");
    refused_before_work(d, "ddr gen sequential --count 16 -o OUT", "-o");
    const auto ddr = (d / "seq.trace").string();
    REQUIRE(run_cardsim("ddr gen sequential --count 16 -o " + ddr).code == 0);
    refused_before_work(d, "ddr replay " + ddr + " --ddr-trace OUT", "--ddr-trace");
    const auto spec = (d / "spec.toml").string();
    std::ofstream(spec)
        << "name = \"s\"\ntokens = 2\nmodel = { generate = { arch = \"dense\", size = \"tiny\", "
           "seed = 1 } }\n[axes]\nddr.channels = [1]\n";
    const auto before = tree(d.path());
    for (auto out : {(d / "missing" / "sweep").string(), std::string("/proc/cardsim-test-sweep")}) {
        auto r = run_cardsim("sweep " + spec + " -o " + out);
        INFO(r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, "-o " + out));
    }
    CHECK(tree(d.path()) == before);
}

TEST_CASE(
    "a failed command removes its own temporaries and an abandoned writer's, never a file of the user's") {
    ScratchDir d("out-temporaries");
    const auto m = make_model(d, "dense");
    const auto out = d / "p9";
    namespace fs = std::filesystem;
    // The user's files that only look like temporaries, and a live writer's (process 1 runs).
    fs::create_directories(d / "p9.tmp-notes");
    std::ofstream(d / "p9.tmp-notes" / "a.txt") << "mine";
    std::ofstream(d / "p9.tmpl") << "template";
    std::ofstream(d / ".p9.tmp-1-0") << "a live writer's";
    // A writer killed an hour ago (no process 99999999 runs: above any pid_max).
    std::ofstream(d / ".p9.tmp-99999999-3") << std::string(4096, 'x');
    fs::last_write_time(d / ".p9.tmp-99999999-3", fs::file_time_type::clock::now() - std::chrono::hours(1));
    auto r = run_cardsim("compile " + (d / "nonexistent").string() + " -o " + out.string());
    CHECK(r.code != 0);
    CHECK(fs::exists(d / "p9.tmp-notes" / "a.txt"));
    CHECK(fs::exists(d / "p9.tmpl"));
    CHECK(fs::exists(d / ".p9.tmp-1-0"));
    // A compile that claims the output clears the abandoned temporary, and leaves none of its own.
    auto ok = run_cardsim("compile " + m + " -o " + out.string());
    INFO(ok.out);
    REQUIRE(ok.code == 0);
    CHECK_FALSE(fs::exists(d / ".p9.tmp-99999999-3"));
    for (auto& e : fs::directory_iterator(d.path()))
        if (e.path().filename().string().starts_with(".p9.") && e.path().filename() != ".p9.tmp-1-0")
            FAIL_CHECK("left behind: " << e.path());
}

TEST_CASE("compile refuses a set for serving over a plan of cards rather than ignoring the plan") {
    ScratchDir d("out-rows-plan");
    const auto m = make_model(d, "dense");
    auto r = run_cardsim("compile " + m + " -o " + (d / "s").string() +
                         " --rows 1,2 --set system.cards=2 --plan pp");
    CHECK(r.code == 2);
    CHECK(contains(r.out, "--plan pp: a set for serving is not built for a system of cards yet"));
    CHECK_FALSE(std::filesystem::exists(d / "s"));
}
