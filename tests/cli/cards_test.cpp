// A system of several cards from the command line: a card count is never accepted and ignored
// (without a plan a command refuses it), `check --plan pp` gives each card's DDR budget (Qwen3-32B
// at int8, which one card refuses, fits on two), a capacity refusal names the card, and a
// pipeline-parallel run is bit-exact and reports its links.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

TEST_CASE("a card count without a plan is refused, never ignored, and a plan needs cards") {
    ScratchDir dir("cards-refuse");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --seed 1 -o " + m).code == 0);
    const std::vector<std::string> commands{"run " + m, "check " + m, "compile " + m + " -o " + m + ".prog",
                                            "serve " + m + " --gen poisson"};
    for (const auto& cmd : commands) {
        auto r = run_cardsim(cmd + " --set system.cards=2");
        INFO(cmd << ":\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, "system.cards = 2"));
    }
    auto one = run_cardsim("run " + m + " --plan pp");
    CHECK(one.code == 2);
    CHECK(contains(one.out, "--plan pp splits a model over system.cards cards, and system.cards = 1"));
    auto old = run_cardsim("run " + m + " --set capabilities.cards=2");
    CHECK(old.code == 2);
    CHECK(contains(old.out, "has moved to `system.cards`"));
    auto tp = run_cardsim("run " + m + " --set system.cards=2 --plan tp");
    CHECK(tp.code == 2);
    CHECK(contains(tp.out, "not built yet"));
}

TEST_CASE("Qwen3-32B at int8, which one card refuses, fits on two cards by layers, and over a card's DDR "
          "the refusal names the card") {
    ScratchDir dir("cards-32b");
    const auto m = (dir.path() / "qwen3-32b").string();
    REQUIRE(run_cardsim("make-model --arch dense --size 32b --shapes-only -o " + m).code == 0);
    auto one = run_cardsim("check " + m);
    CHECK(one.code == 1);
    auto two = run_cardsim("check " + m + " --set system.cards=2 --plan pp");
    INFO(two.out);
    CHECK(two.code == 0);
    CHECK(contains(two.out, "card 0 of 2 (ops 0 .. "));
    CHECK(contains(two.out, "card 1 of 2 (ops "));
    CHECK(contains(two.out, "weights (int8): 15.8 GiB"));
    auto small = run_cardsim("check " + m + " --set system.cards=2 --plan pp --set ddr.channels=2");
    INFO(small.out);
    CHECK(small.code == 1);
    CHECK(contains(small.out, "card 0 of 2: the weights need 15.8 GiB at int8"));
    CHECK(contains(small.out, "card 1 of 2: the weights need 15.8 GiB at int8"));
}

TEST_CASE("a pipeline-parallel run over two cards is bit-exact and reports its link's bytes") {
    ScratchDir dir("cards-run");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 2 -o " + m).code == 0);
    auto r = run_cardsim("run " + m + " --tokens 4 --set system.cards=2 --plan pp --machine");
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "bit_exact=yes"));
    CHECK(contains(r.out, "cards=2"));
    CHECK_FALSE(contains(r.out, "link_bytes=0\n"));
    // The summary's time split has the network unit, whose receives wait on the link.
    auto text = run_cardsim("run " + m + " --tokens 4 --set system.cards=2 --plan pp --timing-only");
    REQUIRE(text.code == 0);
    CHECK(contains(text.out, "time in network: "));
    CHECK(contains(text.out, ", link "));
    auto c = run_cardsim("compile " + m + " -o " + (dir.path() / "p").string() +
                         " --set system.cards=2 --plan pp");
    INFO(c.out);
    CHECK(c.code == 0);
    CHECK(contains(c.out, "p.card0: card 0 of 2"));
    CHECK(contains(c.out, "p.card1: card 1 of 2"));
}

TEST_CASE("a model with experts runs over a pipeline of cards bit-exact, and its routing trace times it "
          "exactly") {
    ScratchDir dir("cards-experts");
    for (const std::string arch : {"moe", "hybrid-moe"}) {
        const auto m = (dir.path() / arch).string();
        REQUIRE(run_cardsim("make-model --arch " + arch + " --size tiny --seed 1 -o " + m).code == 0);
        const std::string system =
            " --set capabilities.experts=true --set system.cards=2 --plan pp --seqs 4 --tokens 3 --machine";
        CHECK(run_cardsim("check " + m + " --set capabilities.experts=true --set system.cards=2 --plan pp")
                  .code == 0);
        const auto routing = (dir.path() / (arch + ".routing")).string();
        auto full = run_cardsim("run " + m + system + " --routing-out " + routing);
        INFO(arch << ":\n" << full.out);
        REQUIRE(full.code == 0);
        CHECK(contains(full.out, "bit_exact=yes"));
        CHECK(contains(full.out, "cards=2"));
        // Every Moe layer's routing is gathered from the card that routed it: a timing-only run
        // given it has the full run's cycles and DDR bytes, and the same expert figures.
        auto timing = run_cardsim("run " + m + system + " --timing-only --routing trace:" + routing);
        REQUIRE(timing.code == 0);
        for (const std::string key :
             {"cycles=", "ddr_bytes=", "expert_bytes_per_step=", "experts_touched_per_layer="}) {
            auto value = [&](const std::string& out) {
                auto at = out.find("\n" + key);
                REQUIRE(at != std::string::npos);
                return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
            };
            CHECK(value(timing.out) == value(full.out));
        }
    }
}
