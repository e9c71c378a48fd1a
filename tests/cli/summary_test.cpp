// One summary whatever outputs a run writes: the per-unit command counts, the order of the lines
// and every figure are the same with and without --trace, --report and the other exports; only
// the host's own time differs.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <map>

#include <sstream>
#include <string>

using cardsim::test::contains;
using cardsim::test::machine_values;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// The summary without its `host:` line (wall-clock time, different every run).
std::string without_host(const std::string& out) {
    std::istringstream in(out);
    std::string kept;
    for (std::string line; std::getline(in, line);)
        if (line.rfind("host: ", 0) != 0) kept += line + "\n";
    return kept;
}

} // namespace

TEST_CASE("the summary is the same with and without the trace and the other outputs") {
    ScratchDir d("summary-same");
    for (auto arch : {"hybrid", "dense"}) {
        const auto m = make_model(d, arch);
        const auto plain = run_cardsim("run " + m + " --tokens 3");
        REQUIRE(plain.code == 0);
        const auto o = (d / arch).string();
        const auto traced = run_cardsim("run " + m + " --tokens 3 --trace " + o + ".trace");
        const auto all = run_cardsim("run " + m + " --tokens 3 --trace " + o + "2.trace --report " + o +
                                     ".html --csv " + o + ".csv --perfetto " + o + ".json");
        REQUIRE(traced.code == 0);
        REQUIRE(all.code == 0);
        INFO(plain.out);
        CHECK(without_host(plain.out) == without_host(traced.out));
        CHECK(without_host(plain.out) == without_host(all.out));
        // The command counts are the real ones, not one folded record a unit kind.
        CHECK_FALSE(contains(plain.out, ": 1 command, "));
        CHECK(contains(plain.out, "time in matvec: "));
    }
}

TEST_CASE("the machine lines are the same with and without a trace, host seconds aside") {
    ScratchDir d("summary-machine");
    const auto m = make_model(d, "hybrid");
    auto a = machine_values(run_cardsim("run " + m + " --tokens 3 --machine").out);
    auto b =
        machine_values(run_cardsim("run " + m + " --tokens 3 --machine --trace " + (d / "t").string()).out);
    REQUIRE(a.count("cycles"));
    for (auto* kv : {&a, &b})
        std::erase_if(*kv, [](auto& p) { return p.first.rfind("host_", 0) == 0; });
    CHECK(a == b);
}

TEST_CASE("the host line reports every phase of the process, and its total holds the phases' critical path") {
    ScratchDir d("summary-host");
    const auto m = make_model(d, "hybrid");
    auto r = run_cardsim("run " + m + " --tokens 3");
    REQUIRE(r.code == 0);
    for (auto part : {"host: load ", ", compile ", ", simulation ", ", golden ", ", reference ", ", outputs ",
                      " s in all\n"})
        CHECK(contains(r.out, part));
    auto kv = machine_values(run_cardsim("run " + m + " --tokens 3 --machine").out);
    std::map<std::string, double> s;
    for (auto k : {"host_load_seconds", "host_compile_seconds", "host_simulation_seconds",
                   "host_golden_seconds", "host_reference_seconds", "host_outputs_seconds"}) {
        INFO(k);
        REQUIRE(kv.count(k));
        s[k] = std::stod(kv[k]);
        CHECK(s[k] >= 0);
    }
    // Load, compile and outputs run one after another; simulation, golden and reference overlap
    // (the golden packs while the card runs, the reference runs beside the golden check), so each of
    // those three, not their sum, lies within what is left of the total.
    const double serial = s["host_load_seconds"] + s["host_compile_seconds"] + s["host_outputs_seconds"];
    for (auto k : {"host_simulation_seconds", "host_golden_seconds", "host_reference_seconds"}) {
        INFO(k);
        CHECK(std::stod(kv["host_total_seconds"]) >= serial + s[k]);
    }
    CHECK(std::stod(kv["host_total_seconds"]) > 0);
}

TEST_CASE("a prefill's simulation is part of the host line's simulation, beside the decode steps") {
    ScratchDir d("summary-prefill");
    const auto m = make_model(d, "dense");
    // A long prompt in short chunks: its prefill simulates 128 steps, the decode 2.
    const std::string run = "run " + m + " --timing-only --prompt-len 512 --chunk 4 --tokens 2";
    auto r = run_cardsim(run);
    REQUIRE(r.code == 0);
    // `simulation S s (prefill P s, setup U s, steps T s: ...`
    const auto at = r.out.find(", simulation ");
    REQUIRE(at != std::string::npos);
    double sim = 0, prefill = 0, setup = 0, steps = 0;
    REQUIRE(std::sscanf(r.out.c_str() + at, ", simulation %lf s (prefill %lf s, setup %lf s, steps %lf s",
                        &sim, &prefill, &setup, &steps) == 4);
    CHECK(prefill > 0);
    CHECK(sim + 0.015 >= prefill + setup + steps); // each printed to 2 decimals
    // --machine's simulation is the same sum: the prefill's and the decode run's.
    auto kv = machine_values(run_cardsim(run + " --machine").out);
    REQUIRE_FALSE(kv["host_prefill_seconds"].empty());
    const double machine_prefill = std::stod(kv["host_prefill_seconds"]);
    CHECK(machine_prefill > 0);
    CHECK(std::stod(kv["host_simulation_seconds"]) ==
          Approx(std::stod(kv["host_seconds"]) + machine_prefill).epsilon(1e-6));
    // Without a prefill the key is empty, not zero.
    CHECK(machine_values(
              run_cardsim("run " + m + " --timing-only --tokens 2 --machine").out)["host_prefill_seconds"]
              .empty());
}

TEST_CASE("a phase that did not run is left out of the host line and empty in --machine, never zero") {
    ScratchDir d("summary-absent");
    const auto m = make_model(d, "dense");
    // Timing-only: neither the golden executor nor the reference runs.
    auto timing = run_cardsim("run " + m + " --tokens 2 --timing-only");
    REQUIRE(timing.code == 0);
    CHECK_FALSE(contains(timing.out, ", golden "));
    CHECK_FALSE(contains(timing.out, ", reference "));
    auto kv = machine_values(run_cardsim("run " + m + " --tokens 2 --timing-only --machine").out);
    REQUIRE(kv.count("host_golden_seconds"));
    CHECK(kv["host_golden_seconds"].empty());
    CHECK(kv["host_reference_seconds"].empty());
    // --no-reference: the golden check runs, the reference does not.
    auto full = run_cardsim("run " + m + " --tokens 2 --no-reference");
    REQUIRE(full.code == 0);
    CHECK(contains(full.out, ", golden "));
    CHECK_FALSE(contains(full.out, ", reference "));
    kv = machine_values(run_cardsim("run " + m + " --tokens 2 --no-reference --machine").out);
    CHECK(std::stod(kv["host_golden_seconds"]) >= 0);
    CHECK(kv["host_reference_seconds"].empty());
}

TEST_CASE("a prefill simulated for --prompt-len counts as simulation, not compile") {
    ScratchDir d("summary-prefill");
    const auto m = make_model(d, "dense");
    auto kv = machine_values(
        run_cardsim("run " + m + " --timing-only --prompt-len 256 --chunk 16 --tokens 2 --machine").out);
    REQUIRE(kv.count("host_simulation_seconds"));
    // host_seconds is the decode's own simulation; the phase adds the prefill's 16 chunks to it.
    CHECK(std::stod(kv["host_simulation_seconds"]) > std::stod(kv["host_seconds"]));
    CHECK(std::stod(kv["host_compile_seconds"]) >= 0);
}

TEST_CASE("serve's host line and --machine count writing its table as outputs, inside the total") {
    ScratchDir d("summary-serve-outputs");
    const auto m = make_model(d, "hybrid");
    const auto t = (d / "trace.csv").string();
    { std::ofstream(t) << "arrival_s,prompt_tokens,output_tokens\n0,2,2\n0,3,2\n"; }
    const auto table = (d / "table.csv").string();
    auto text = run_cardsim("serve " + m + " --requests " + t + " --table " + table);
    REQUIRE(text.code == 0);
    CHECK(contains(text.out, ", outputs "));
    auto kv =
        machine_values(run_cardsim("serve " + m + " --requests " + t + " --machine --table " + table).out);
    REQUIRE(kv.count("host_outputs_seconds"));
    const double outputs = std::stod(kv["host_outputs_seconds"]);
    CHECK(outputs >= 0);
    const double serial = std::stod(kv["host_load_seconds"]) + std::stod(kv["host_compile_seconds"]) +
                          std::stod(kv["host_simulation_seconds"]) + outputs;
    CHECK(std::stod(kv["host_total_seconds"]) >= serial);
}

TEST_CASE("a --prompt-len run's trace calls its decode steps decode: its prefill ran apart") {
    const ScratchDir d("prompt-len-trace-phases");
    const auto m = make_model(d, "dense");
    const auto trace = (d / "t.trace").string();
    auto r = run_cardsim("run " + m + " --timing-only --prompt-len 32 --chunk 8 --tokens 5 --trace " + trace);
    INFO(r.out);
    REQUIRE(r.code == 0);
    std::ifstream in(trace);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(contains(text, "meta prefill_steps=0\n"));
    CHECK_FALSE(contains(text, "meta prefill_steps=5"));
}
