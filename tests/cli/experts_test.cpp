// Experts through the command line: `check` grants a Moe model exactly where `run` runs it, `fit`
// counts the router with experts, and a timing-only run given `run --routing-out`'s trace has the
// full run's cycles and DDR bytes.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include <regex>
#include <string>
#include <tuple>

using cardsim::test::contains;
using cardsim::test::machine_values;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

TEST_CASE("check's verdict on a Moe model agrees with run's on every card", "[cli][experts]") {
    ScratchDir d("experts-check-run");
    for (const std::string arch : {"moe", "hybrid-moe", "hybrid-moe35"}) {
        const auto m = make_model(d, arch);
        const std::pair<std::string, std::string> cards[] = {
            {"", "the engine has no unit for experts"},
            {"--set capabilities.experts=true", ""},
            {"--set capabilities.experts=true --set units.router.count=0", "has no router unit"},
            // The experts' matvecs and SiLU-multiply need those units too (check granted this once).
            {"--set capabilities.experts=true --set units.silu_mul.count=0",
             "runs its experts on the silu_mul unit, and the card has none"},
        };
        for (auto& [set, refusal] : cards) {
            INFO(arch << " " << set);
            auto check = run_cardsim("check " + m + " " + set);
            auto run = run_cardsim("run " + m + " " + set + " --tokens 2 --no-reference");
            if (refusal.empty()) {
                CHECK(check.code == 0);
                CHECK(contains(check.out, "verdict: the card runs this model"));
                CHECK(run.code == 0);
                CHECK(contains(run.out, "bit-exact: yes"));
            } else {
                CHECK(check.code == 1);
                CHECK(contains(check.out, refusal));
                CHECK(run.code == 1);
                CHECK(contains(run.out, refusal));
            }
        }
    }
}

TEST_CASE("fit counts the router unit's resources only on a card with experts", "[cli][experts]") {
    auto with = run_cardsim("fit --set capabilities.experts=true");
    auto without = run_cardsim("fit");
    REQUIRE(with.code == 0);
    REQUIRE(without.code == 0);
    CHECK(contains(with.out, "\nrouter "));
    CHECK_FALSE(contains(without.out, "\nrouter "));
}

TEST_CASE("run --routing-out then --timing-only --routing trace: gives the full run's cycles and DDR bytes",
          "[cli][experts]") {
    ScratchDir d("experts-routing-out");
    const auto m = make_model(d, "moe", 2, "small");
    const std::string card = " --set capabilities.experts=true --tokens 3 --seqs 4 --machine";
    const auto routing = (d / "routing.txt").string();
    auto full = run_cardsim("run " + m + card + " --no-reference --routing-out " + routing);
    REQUIRE(full.code == 0);
    auto timing = run_cardsim("run " + m + card + " --timing-only --routing trace:" + routing);
    REQUIRE(timing.code == 0);
    // A routing trace chooses the experts itself: a seed would be ignored, so it is refused.
    for (auto cmd : {"run " + m + card + " --timing-only", "serve " + m + " --gen poisson --count 2"}) {
        auto seeded = run_cardsim(cmd + " --routing trace:" + routing + " --routing-seed 7");
        INFO(seeded.out);
        CHECK(seeded.code == 2);
        CHECK(contains(seeded.out, "--routing-seed: --routing trace:"));
    }
    // A trace of other rows than the run's is bad input (exit 2) naming the trace, one card or a
    // pipeline of two, run or serve; it was an internal error thrown through the simulation kernel.
    for (auto cmd : {"run " + m + " --set capabilities.experts=true --tokens 3 --seqs 2 --timing-only",
                     "run " + m + card + " --timing-only --set system.cards=2 --plan pp",
                     "serve " + m + " --set capabilities.experts=true --gen poisson --count 4"}) {
        auto misfit = run_cardsim(cmd + " --routing trace:" + routing);
        INFO(cmd << "\n" << misfit.out);
        CHECK(misfit.code == 2);
        CHECK(contains(misfit.out, "routing trace `" + routing + "`: step 0 router 0 chooses"));
        CHECK_FALSE(contains(misfit.out, "internal error"));
    }
    auto f = machine_values(full.out), t = machine_values(timing.out);
    CHECK(f.at("bit_exact") == "yes");
    CHECK(t.at("cycles") == f.at("cycles"));
    CHECK(t.at("ddr_bytes") == f.at("ddr_bytes"));
    // The per-layer expert stats come from the routing: the same for both runs, and at most k·rows
    // experts a layer (4 rows of 4 of 16 experts).
    CHECK(t.at("expert_bytes_per_step") == f.at("expert_bytes_per_step"));
    CHECK(std::stod(f.at("experts_touched_per_layer")) <= 16.0);
    CHECK(std::stod(f.at("experts_touched_per_layer")) >= 4.0);
    const auto trace = (d / "t.trace").string();
    auto text = run_cardsim(
        "run " + m + " --set capabilities.experts=true --tokens 3 --seqs 4 --timing-only --routing trace:" +
        routing + " --trace " + trace);
    CHECK(contains(text.out, "experts: 4 Moe layers, a step "));
    CHECK(contains(text.out, "  Moe layer 0: "));
    // The trace carries them too (meta run.experts).
    auto shown = run_cardsim("trace show --meta " + trace);
    CHECK(contains(shown.out, "Moe layer 3: "));
    // And the report page made later from the trace shows them, a row a layer.
    const auto page = (d / "run.html").string();
    REQUIRE(run_cardsim("report " + trace + " -o " + page).code == 0);
    std::ifstream in(page);
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(contains(html, "<section id=\"experts\">"));
    CHECK(contains(html, "<a href=\"#experts\">experts</a>"));
    CHECK(contains(html, "experts: 4 Moe layers, a step "));
    CHECK(contains(html, "<tr><th>Moe layer 3</th><td>"));
    // A full run refuses a routing model: its router chooses from the data.
    auto refused = run_cardsim("run " + m + card + " --routing uniform");
    CHECK(refused.code != 0);
    CHECK(contains(refused.out, "--routing uniform: a full run's router chooses the experts"));
    // An expert-less model has nothing to route.
    const auto dense = make_model(d, "dense");
    auto none =
        run_cardsim("run " + dense + " --tokens 2 --no-reference --routing-out " + (d / "r2.txt").string());
    CHECK(none.code != 0);
    CHECK(contains(none.out, "the model has no experts"));
}

TEST_CASE("serve runs a Moe model: bit-exact with --check, timed by a routing model without it",
          "[cli][experts]") {
    ScratchDir d("experts-serve");
    const auto m = make_model(d, "moe", 2, "small");
    const std::string args = "serve " + m +
                             " --set capabilities.experts=true --gen poisson --rate 50000 --count 6 "
                             "--prompt-len 8 --output-len 3 --seed 1";
    auto checked = run_cardsim(args + " --check");
    INFO(checked.out);
    REQUIRE(checked.code == 0);
    CHECK(contains(checked.out, "served 6 of 6 requests"));
    CHECK(contains(checked.out, "bit-exact: yes"));
    auto timed = run_cardsim(args + " --routing skew:1.5");
    REQUIRE(timed.code == 0);
    CHECK(contains(timed.out, "served 6 of 6 requests"));
    auto both = run_cardsim(args + " --check --routing uniform");
    CHECK(both.code != 0);
    CHECK(contains(both.out, "--routing: with --check the router chooses"));
}

TEST_CASE("make-model --shapes-only writes the published expert models, which check recognises with experts",
          "[cli][experts]") {
    ScratchDir d("experts-published");
    const std::tuple<std::string, std::string, std::string, std::string> published[] = {
        {"moe", "30b-a3b", "Qwen/Qwen3-30B-A3B", "dense decoder with experts (qwen3_moe)"},
        {"moe", "235b-a22b", "Qwen/Qwen3-235B-A22B", "dense decoder with experts (qwen3_moe)"},
        {"hybrid-moe", "80b-a3b", "Qwen/Qwen3-Next-80B-A3B", "hybrid decoder with experts (qwen3_next)"},
        {"hybrid-moe35", "35b-a3b", "Qwen/Qwen3.5-35B-A3B", "hybrid decoder with experts (qwen3_5_moe)"},
        {"hybrid-moe35", "122b-a10b", "Qwen/Qwen3.5-122B-A10B", "hybrid decoder with experts (qwen3_5_moe)"},
    };
    for (const auto& [arch, size, name, kind] : published) {
        INFO(arch << " " << size);
        const auto m = (d / size).string();
        auto made = run_cardsim("make-model --arch " + arch + " --shapes-only --size " + size + " -o " + m);
        CHECK(made.code == 0);
        CHECK(contains(made.out, name));
        auto check = run_cardsim("check " + m + " --set capabilities.experts=true");
        CHECK(check.code <= 1); // recognised and lowered: granted, or refused for its size alone
        CHECK(contains(check.out, kind));
        CHECK_FALSE(contains(check.out, "no unit for experts"));
    }
    auto wrong = run_cardsim("make-model --arch moe --shapes-only --size 35b-a3b -o " + (d / "x").string());
    CHECK(wrong.code == 2);
    CHECK(contains(wrong.out, "35b-a3b is a published model of --arch hybrid-moe35, not moe"));
}

TEST_CASE("run --rtl matvec refuses a model with experts before the run, not with a bus error in it",
          "[cli][experts]") {
    ScratchDir d("experts-rtl");
    const auto m = make_model(d, "moe");
    auto r = run_cardsim("run " + m + " --set capabilities.experts=true --tokens 2 --rtl matvec");
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(contains(r.out, "--rtl matvec: the RTL matvec runs the card's Matvec commands"));
    CHECK_FALSE(contains(r.out, "bus error"));
}

TEST_CASE("expert figures are per decode step under a pipeline's microbatches, and the busiest card is one "
          "card over all its layers",
          "[cli][experts]") {
    ScratchDir d("experts-per-decode-step");
    const auto m = make_model(d, "moe", 2, "small");
    const std::string moe = " --set capabilities.experts=true --tokens 3 --seqs 4 --machine";
    // The same data routes alike on one card and on a pipeline of two, which steps the 4 sequences in
    // 2 microbatches of 2 rows: the experts a decode step touched are the same; each microbatch
    // streams what its own rows touched, so the pipeline streams at least as much.
    auto one = machine_values(run_cardsim("run " + m + moe + " --no-reference").out);
    auto pp =
        machine_values(run_cardsim("run " + m + moe + " --no-reference --set system.cards=2 --plan pp").out);
    CHECK(pp.at("experts_touched_per_layer") == one.at("experts_touched_per_layer"));
    CHECK(std::stod(pp.at("expert_bytes_per_step")) >= std::stod(one.at("expert_bytes_per_step")));
    auto text = run_cardsim("run " + m +
                            " --set capabilities.experts=true --tokens 3 --seqs 4 --no-reference "
                            "--set system.cards=2 --plan pp")
                    .out;
    CHECK(contains(text, "touched by 4 rows of 4"));
    CHECK(contains(text, "once in each of the step's 2 microbatches that touched it"));
    // Expert parallel within 2 stages of 2 cards: each card holds half of its stage's layers'
    // experts, so the busiest card streams less than the four layers' busiest cards together.
    const std::string epp = "run " + m +
                            " --set capabilities.experts=true --set system.cards=4 --plan ep×pp --seqs 4 "
                            "--microbatches 1 --tokens 2 --timing-only";
    auto lines = run_cardsim(epp).out;
    double layers = 0;
    int split = 0;
    const std::regex busiest(R"(split over 2 cards, the busiest ([0-9.]+) MB)");
    for (std::sregex_iterator i(lines.begin(), lines.end(), busiest), end; i != end; ++i, ++split)
        layers += std::stod((*i)[1]) * 1e6;
    REQUIRE(split == 4);
    auto card = machine_values(run_cardsim(epp + " --machine").out);
    const double total = std::stod(card.at("expert_bytes_busiest_card"));
    CHECK(total < 0.75 * layers);
    CHECK(total >= std::stod(card.at("expert_bytes_per_step")) / 4); // at least an even share of 4 cards
}
