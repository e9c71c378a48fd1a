// `cardsim fit` as a user runs it, and the fit verdict `check` and `run` print; the knob point's
// cost in cycles: a point that does more work takes more cycles, all else equal.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::machine_values;
using cardsim::test::run_cardsim;

namespace {

/// Each matvec command's cycles (end - start) in a trace, in order.
std::vector<long> matvec_cycles(const std::filesystem::path& trace) {
    std::ifstream in(trace);
    std::vector<long> v;
    for (std::string line; std::getline(in, line);) {
        std::istringstream f(line);
        std::string cmd, index, unit, op;
        long start = 0, end = 0;
        if (f >> cmd >> index >> unit >> op >> start >> end && cmd == "cmd" && op == "Matvec")
            v.push_back(end - start);
    }
    return v;
}

} // namespace

TEST_CASE(
    "fit prints the table per unit kind, the device, the Fmax and the power, and exits 0 on the default") {
    auto r = run_cardsim("fit");
    INFO(r.out);
    REQUIRE(r.code == 0);
    for (auto s : {"matvec", "arena", "shell", "Stratix 10 SX 2800", "clock: Fmax ~", "power (peak",
                   "verdict: the config fits"})
        CHECK(contains(r.out, s));
}

TEST_CASE("fit exits 1 and says which budget a config exceeds, in a sentence") {
    auto r = run_cardsim("fit --set units.matvec.count=24");
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(contains(r.out, "DSP blocks; the Stratix 10 SX 2800 has 5,760"));
    auto bad = run_cardsim("fit --knob scaling=wide");
    CHECK(bad.code == 2);
}

TEST_CASE("check and run print the one-line fit verdict, and run --machine carries the fit figures") {
    cardsim::test::ScratchDir d("fit_verdict");
    auto m = (d / "hybrid").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 2 -o " + m).code == 0);
    auto check = run_cardsim("check " + m);
    CHECK(contains(check.out, "\nfit: yes ("));
    auto run = run_cardsim("run " + m + " --tokens 2 --timing-only");
    INFO(run.out);
    CHECK(contains(run.out, "\nfit: yes ("));
    CHECK(contains(run.out, "tokens per joule"));
    auto kv = machine_values(run_cardsim("run " + m + " --tokens 2 --timing-only --machine").out);
    for (auto k : {"dsp", "alm", "m20k", "fmax_mhz", "watts", "tokens_per_joule"})
        CHECK(std::stod(kv.at(k)) > 0);
    CHECK(kv.at("fits") == "yes");
}

TEST_CASE("a knob point that does more work takes more cycles, everything else equal") {
    cardsim::test::ScratchDir d("fit_knob_cycles");
    auto m = (d / "hybrid").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 2 -o " + m).code == 0);
    auto run = [&](const std::string& knobs, const std::string& name) {
        auto t = d / (name + ".trace");
        auto r = run_cardsim("run " + m + " --tokens 2 --timing-only " + knobs + " --trace " + t.string());
        REQUIRE(r.code == 0);
        return matvec_cycles(t);
    };
    // A matvec 32 MACs wide is compute bound on the tiny model's rows: its second pass shows.
    const std::string narrow = "--set units.matvec.width=32 ";
    auto one = run(narrow, "one"), two = run(narrow + "--knob activations=two", "two");
    REQUIRE(one.size() == two.size());
    REQUIRE_FALSE(one.empty());
    long total_one = 0, total_two = 0, longer = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
        total_one += one[i];
        total_two += two[i];
        longer += two[i] > one[i];
    }
    // Each matvec's own time grows; a few may not where refresh or a neighbour's DDR traffic falls
    // differently once the run's timing shifts, but most do and the sum does.
    CHECK(total_two > total_one);
    CHECK(2 * longer > long(one.size()));
    // Array attention on 16 lanes against vector attention's 64: every attention takes longer.
    auto attention_total = [&](const std::string& knobs, const std::string& name) {
        auto t = d / (name + ".trace");
        REQUIRE(
            run_cardsim("run " + m + " --tokens 2 --timing-only " + knobs + " --trace " + t.string()).code ==
            0);
        std::ifstream in(t);
        long total = 0;
        for (std::string line; std::getline(in, line);) {
            std::istringstream f(line);
            std::string cmd, index, unit, op;
            long start = 0, end = 0;
            if (f >> cmd >> index >> unit >> op >> start >> end && cmd == "cmd" && op == "Attend")
                total += end - start;
        }
        return total;
    };
    CHECK(attention_total("--knob attention=array --set units.attention.array_width=16", "narrow") >
          attention_total("", "vector"));
}
