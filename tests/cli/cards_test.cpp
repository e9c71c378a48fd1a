// A system of several cards from the command line: a card count is never accepted and ignored
// (without a plan a command refuses it), `check --plan pp` gives each card's DDR budget (Qwen3-32B
// at int8, which one card refuses, fits on two), a capacity refusal names the card, and a
// pipeline-parallel run is bit-exact and reports its links.

#include "models/synthetic.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"
#include "traces/reader.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// The value of `key=` on its own line of `--machine` output, or empty.
std::string value_of(const std::string& out, const std::string& key) {
    const std::string text = "\n" + out;
    const auto at = text.find("\n" + key + "=");
    if (at == std::string::npos) return {};
    const auto from = at + key.size() + 2;
    return text.substr(from, text.find('\n', from) - from);
}

} // namespace

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
    auto tp = run_cardsim("run " + m + " --plan tp");
    CHECK(tp.code == 2);
    CHECK(contains(tp.out, "--plan tp splits a model over system.cards cards, and system.cards = 1"));
    // The exchange between cards is refused by every command that runs one card, not ignored.
    for (const auto& cmd : {"run " + m, "serve " + m + " --gen poisson", "run " + m + " --plan pp"}) {
        auto r = run_cardsim(cmd + " --set system.exchange=f32" +
                             (cmd.find("--plan") != std::string::npos ? " --set system.cards=2" : ""));
        INFO(cmd << ":\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, "system.exchange = f32"));
    }
}

TEST_CASE("a tensor-parallel run over 2 and 4 cards gives the one-card run's outputs bit for bit, dense "
          "and hybrid") {
    ScratchDir dir("cards-tp");
    for (const std::string arch : {"dense", "hybrid"}) {
        const auto m = (dir.path() / arch).string();
        REQUIRE(run_cardsim("make-model --arch " + arch + " --size small --seed 3 -o " + m).code == 0);
        auto one = run_cardsim("run " + m + " --tokens 4 --seqs 2 --machine");
        REQUIRE(one.code == 0);
        for (int cards : {2, 4}) {
            auto tp =
                run_cardsim("run " + m + " --tokens 4 --seqs 2 --machine --plan tp --set system.cards=" +
                            std::to_string(cards));
            INFO(arch << " on " << cards << " cards:\n" << tp.out);
            REQUIRE(tp.code == 0);
            CHECK(contains(tp.out, "bit_exact=yes"));
            CHECK(contains(tp.out, "cards=" + std::to_string(cards)));
            // The same logits as one card (the bit-exact check held them to the golden executor,
            // which is the one card's): the same error against the f64 reference, to the last digit.
            CHECK(value_of(tp.out, "max_abs_error") == value_of(one.out, "max_abs_error"));
            CHECK(value_of(tp.out, "kl") == value_of(one.out, "kl"));
            CHECK(std::stod(value_of(tp.out, "link_bytes")) > 0);
        }
    }
}

TEST_CASE("a tp×pp run over 2 × 2 cards gives the one-card run's outputs bit for bit, dense and hybrid, "
          "each stage's pair joined by its own links") {
    ScratchDir dir("cards-tpxpp");
    for (const std::string arch : {"dense", "hybrid"}) {
        const auto m = (dir.path() / arch).string();
        REQUIRE(run_cardsim("make-model --arch " + arch + " --size small --seed 3 -o " + m).code == 0);
        auto one = run_cardsim("run " + m + " --tokens 4 --seqs 2 --machine");
        REQUIRE(one.code == 0);
        auto both = run_cardsim("run " + m + " --tokens 4 --seqs 2 --plan tp×pp --set system.cards=4");
        INFO(arch << ":\n" << both.out);
        REQUIRE(both.code == 0);
        CHECK(contains(both.out, "bit-exact: yes"));
        CHECK(contains(both.out, "system: 4 cards, tp2xpp2 plan"));
        // Stage 0 on cards 0 and 1, stage 1 on cards 3 and 2: every message goes to a ring neighbour.
        CHECK(contains(both.out, "card 3: rank 0 of 2: 1/2 of every layer's heads and MLP columns; ops "));
        CHECK(contains(both.out, "link 0 -> 3 (1 port)"));
        CHECK(contains(both.out, "link 1 -> 2 (1 port)"));
        CHECK_FALSE(contains(both.out, "link 3 -> 0"));
        auto machine =
            run_cardsim("run " + m + " --tokens 4 --seqs 2 --machine --plan tp2xpp2 --set system.cards=4");
        REQUIRE(machine.code == 0);
        CHECK(value_of(machine.out, "max_abs_error") == value_of(one.out, "max_abs_error"));
        CHECK(value_of(machine.out, "kl") == value_of(one.out, "kl"));
    }
    auto odd = run_cardsim("run " + (dir.path() / "dense").string() + " --plan tp×pp --set system.cards=2");
    CHECK(odd.code == 2);
    CHECK(contains(odd.out, "need an even system.cards of 4 or more, and system.cards = 2"));
}

TEST_CASE("a prompt's chunks overlap across a pipeline of cards: its time to first token lies between "
          "every card's DDR at its peak and one card's") {
    ScratchDir dir("cards-ttft");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    const std::string base = "run " + m + " --timing-only --prompt-len 256 --chunk 16 --tokens 2 --machine";
    auto one = run_cardsim(base);
    REQUIRE(one.code == 0);
    const double alone = std::stod(value_of(one.out, "ttft_seconds"));
    for (const std::string plan : {"pp --set system.cards=2", "pp --set system.cards=4",
                                   "tp --set system.cards=2", "tp×pp --set system.cards=4"}) {
        auto r = run_cardsim(base + " --plan " + plan);
        INFO(plan << ":\n" << r.out);
        REQUIRE(r.code == 0);
        const double ttft = std::stod(value_of(r.out, "ttft_seconds"));
        const double fraction = std::stod(value_of(r.out, "prefill_roofline_fraction"));
        // The roofline is the prefill's DDR bytes over every card's channels at their peak.
        CHECK(fraction > 0);
        CHECK(fraction <= 1.0);
        CHECK(ttft > 0);
        // Handed on chunk by chunk without overlap, N stages would take one card's time or more;
        // overlapped, C chunks take about (C + N − 1) / (C · N) of it: 0.53 on 2 cards, 0.30 on 4.
        if (plan.rfind("pp", 0) == 0) CHECK(ttft < 0.75 * alone);
    }
}

TEST_CASE("a pipeline steps its sequences in microbatches, bit-exact, and refuses a split that is not one") {
    ScratchDir dir("cards-micro");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size small --seed 3 -o " + m).code == 0);
    auto one = run_cardsim("run " + m + " --tokens 4 --seqs 4 --machine");
    REQUIRE(one.code == 0);
    for (const std::string plan : {"pp --set system.cards=2", "pp --set system.cards=4 --microbatches 2",
                                   "tp×pp --set system.cards=4"}) {
        auto r = run_cardsim("run " + m + " --tokens 4 --seqs 4 --machine --plan " + plan);
        INFO(plan << ":\n" << r.out);
        REQUIRE(r.code == 0);
        CHECK(value_of(r.out, "microbatches") == "2");
        CHECK(value_of(r.out, "bit_exact") == "yes");
        CHECK(value_of(r.out, "max_abs_error") == value_of(one.out, "max_abs_error"));
        CHECK(value_of(r.out, "kl") == value_of(one.out, "kl"));
    }
    auto four = run_cardsim("run " + m + " --tokens 4 --seqs 4 --machine --plan pp --set system.cards=4");
    CHECK(value_of(four.out, "microbatches") == "4"); // the largest divisor up to the stages
    auto odd = run_cardsim("run " + m + " --seqs 4 --plan pp --set system.cards=2 --microbatches 3");
    CHECK(odd.code == 2);
    CHECK(contains(odd.out, "--microbatches 3: a step's 4 sequences split into equal groups"));
    auto tp = run_cardsim("run " + m + " --seqs 4 --plan tp --set system.cards=2 --microbatches 2");
    CHECK(tp.code == 2);
    CHECK(contains(tp.out, "microbatches fill the stages of a pipeline, and --plan tp has one stage"));
}

TEST_CASE("serve steps every card of a system, bit-exact under tp, pp and tp×pp, each card holding its "
          "part's stores") {
    ScratchDir dir("cards-serve");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size small --seed 3 -o " + m).code == 0);
    const std::string base = "serve " + m +
                             " --gen poisson --rate 20000 --count 8 --prompt-len 6 --output-len 4 --seed 1 "
                             "--check --machine";
    auto one = run_cardsim(base);
    REQUIRE(one.code == 0);
    const double one_slot = std::stod(value_of(one.out, "slot_bytes"));
    for (const std::string plan :
         {"tp --set system.cards=2", "pp --set system.cards=2", "tp×pp --set system.cards=4"}) {
        auto r = run_cardsim(base + " --plan " + plan);
        INFO(plan << ":\n" << r.out);
        REQUIRE(r.code == 0);
        CHECK(value_of(r.out, "bit_exact") == "yes");
        CHECK(std::stod(value_of(r.out, "link_bytes")) > 0);
        CHECK(value_of(r.out, "served") == value_of(one.out, "served"));
        // A card keeps its own heads' or layers' caches and states: under half of one card's a slot
        // on two cards, a quarter on four (plus each store's rounding to a line).
        const double cards = std::stod(value_of(r.out, "cards"));
        CHECK(std::stod(value_of(r.out, "slot_bytes")) < one_slot / cards * 1.1);
    }
    // The f32 exchange is not the one-card contract: --check refuses it rather than call it not bit-exact.
    auto f32 = run_cardsim(base + " --plan tp --set system.cards=2 --set system.exchange=f32");
    CHECK(f32.code == 2);
    CHECK(contains(f32.out, "--check: the f32 exchange"));
    auto timed = run_cardsim("serve " + m +
                             " --gen poisson --rate 20000 --count 8 --prompt-len 6 --output-len 4 --seed 1 "
                             "--machine --plan tp --set system.cards=2 --set system.exchange=f32");
    CHECK(timed.code == 0);
    auto set = run_cardsim("compile " + m + " -o " + m + ".set --rows 1,2");
    REQUIRE(set.code == 0);
    auto refused = run_cardsim("serve " + m + ".set --gen poisson --count 2 --plan pp --set system.cards=2");
    CHECK(refused.code == 2);
    CHECK(contains(refused.out, "is a set for one card"));
}

TEST_CASE("serving under a pipeline keeps a lane of sequences on each stage at once: saturated, it serves "
          "more tokens/s than one card, which stepping the stages one after another never could, and "
          "bit-exact") {
    ScratchDir dir("cards-serve-lanes");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    // Every request at once: the system is never idle.
    const std::string base =
        "serve " + m + " --gen poisson --rate 1000000 --count 64 --output-len 32 --seed 1 --machine";
    auto one = run_cardsim(base);
    REQUIRE(one.code == 0);
    const double card = std::stod(value_of(one.out, "tokens_per_second"));
    double before = card;
    for (int cards : {2, 4}) {
        auto pp = run_cardsim(base + " --plan pp --set system.cards=" + std::to_string(cards));
        INFO(cards << " cards:\n" << pp.out);
        REQUIRE(pp.code == 0);
        const double tps = std::stod(value_of(pp.out, "tokens_per_second"));
        // One after another, a step would cross every stage in turn (one card's work plus the
        // links): no more than one card's tokens/s. Overlapped, more; never more than the cards'.
        CHECK(tps > 1.2 * before);
        CHECK(tps <= cards * card);
        before = tps;
    }
    auto check =
        run_cardsim("serve " + m +
                    " --gen poisson --rate 1000000 --count 24 --output-len 6 --seed 1 --check --machine "
                    "--plan pp --set system.cards=2");
    INFO(check.out);
    REQUIRE(check.code == 0);
    CHECK(value_of(check.out, "bit_exact") == "yes");
}

TEST_CASE("a plan's programs compiled to files run as the checkpoint does, to the cycle and the bit") {
    ScratchDir dir("cards-prog");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    int n = 0;
    for (const std::string plan :
         {"pp --set system.cards=2", "tp --set system.cards=2", "tp×pp --set system.cards=4"}) {
        const char* const names[] = {"p0", "p1", "p2"};
        const auto prog = (dir.path() / names[n++]).string();
        REQUIRE(run_cardsim("compile " + m + " -o " + prog + " --plan " + plan).code == 0);
        auto files = run_cardsim("run " + prog + " --model " + m + " --tokens 3 --machine --plan " + plan);
        auto here = run_cardsim("run " + m + " --tokens 3 --machine --max-positions 256 --plan " + plan);
        INFO(plan << ":\n" << files.out << here.out);
        REQUIRE(files.code == 0);
        REQUIRE(here.code == 0);
        CHECK(value_of(files.out, "bit_exact") == "yes");
        CHECK(value_of(files.out, "cycles") == value_of(here.out, "cycles"));
        CHECK(value_of(files.out, "link_bytes") == value_of(here.out, "link_bytes"));
        CHECK(value_of(files.out, "max_abs_error") == value_of(here.out, "max_abs_error"));
    }
    // Card 1's program missing, and programs for more cards than the system has, are named.
    const auto p0 = (dir.path() / "p0").string();
    std::filesystem::remove(p0 + ".card1");
    auto missing = run_cardsim("run " + p0 + " --plan pp --set system.cards=2 --timing-only");
    CHECK(missing.code == 2);
    CHECK(contains(missing.out, "p0.card1: missing; a plan over 2 cards runs one program a card"));
    // Programs of another plan, or a card alone, are refused naming what each was compiled as.
    const auto p2 = (dir.path() / "p2").string();
    auto other = run_cardsim("run " + p2 + " --plan pp --set system.cards=2 --timing-only");
    CHECK(other.code == 2);
    CHECK(contains(other.out, "p2.card0: compiled as card 0 of --plan tp2xpp2 over 4 cards; this run is "
                              "--plan pp over 2 cards"));
    auto alone = run_cardsim("run " + p2 + ".card1 --timing-only");
    CHECK(alone.code == 2);
    CHECK(contains(alone.out, "p2.card1: compiled as card 1 of --plan tp2xpp2 over 4 cards; this run is on "
                              "one card"));
    // A program of one card under a plan is refused too.
    const auto single = (dir.path() / "single").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + single).code == 0);
    for (auto suffix : {"", ".ddr"}) {
        std::filesystem::copy_file(single + suffix, single + ".card0" + std::string(suffix));
        std::filesystem::copy_file(single + suffix, single + ".card1" + std::string(suffix));
    }
    auto one = run_cardsim("run " + single + " --plan pp --set system.cards=2 --timing-only");
    CHECK(one.code == 2);
    CHECK(contains(one.out, "single.card0: a program for one card; this run is --plan pp over 2 cards"));
    // Compiling over fewer cards to the same name removes the earlier compile's other cards.
    REQUIRE(run_cardsim("compile " + m + " -o " + p2 + " --plan pp --set system.cards=2").code == 0);
    CHECK_FALSE(std::filesystem::exists(p2 + ".card2"));
    CHECK_FALSE(std::filesystem::exists(p2 + ".card3.ddr"));
    CHECK(run_cardsim("run " + p2 + " --plan pp --set system.cards=2 --timing-only").code == 0);
    // A card of the same plan from another compile (another checkpoint) is refused, not run.
    const auto m2 = (dir.path() / "m2").string(), q = (dir.path() / "q").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 4 -o " + m2).code == 0);
    REQUIRE(run_cardsim("compile " + m2 + " -o " + q + " --plan pp --set system.cards=2").code == 0);
    for (auto suffix : {".card0", ".card0.ddr"})
        std::filesystem::copy_file(q + suffix, p2 + suffix,
                                   std::filesystem::copy_options::overwrite_existing);
    auto mixed = run_cardsim("run " + p2 + " --plan pp --set system.cards=2 --timing-only");
    INFO(mixed.out);
    CHECK(mixed.code == 2);
    CHECK(contains(mixed.out, "the cards of a plan come from one compile"));
}

TEST_CASE("a system joined by a switch runs tensor parallel bit-exact, every message crossing the switch, "
          "and its trace reads back") {
    ScratchDir dir("cards-switch");
    const auto m = (dir.path() / "m").string();
    const auto trace = (dir.path() / "sw.trace").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    auto r =
        run_cardsim("run " + m + " --tokens 2 --plan tp --set system.cards=4 --set system.topology=switch " +
                    "--trace " + trace);
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "bit-exact: yes"));
    CHECK(contains(r.out, "link 0 -> switch"));
    CHECK(contains(r.out, "link switch -> 3"));
    CHECK_FALSE(contains(r.out, "link 0 -> 1 "));
    auto show = run_cardsim("trace show " + trace);
    INFO(show.out);
    CHECK(show.code == 0);
    CHECK(contains(show.out, "link 0 -> 4"));
}

TEST_CASE("tensor parallel splits Qwen3-Next's grouped Gated-DeltaNet projections by key-head groups, "
          "bit-exact on 2 and 4 cards") {
    ScratchDir dir("cards-next");
    const auto m = dir.path() / "next";
    // A small Qwen3-Next (grouped in_proj_qkvz / in_proj_ba, gated attention) whose MLPs are all
    // dense (`mlp_only_layers`): tensor parallel splits dense MLPs, not experts.
    auto config = cardsim::models::synth_config(cardsim::models::SynthArch::HybridMoe,
                                                cardsim::models::SynthSize::Small);
    boost::json::array dense;
    const auto layers = config.at("num_hidden_layers").to_number<std::int64_t>();
    for (std::int64_t l = 0; l < layers; ++l)
        dense.push_back(l);
    config["mlp_only_layers"] = dense;
    cardsim::models::SynthOptions o;
    o.seed = 5;
    cardsim::models::write_synthetic(config, o, m);
    auto check = run_cardsim("check " + m.string() + " --plan tp --set system.cards=2");
    INFO(check.out);
    CHECK(check.code == 0);
    CHECK(contains(check.out, "(qwen3_next)"));
    CHECK(contains(check.out, "DeltaStep"));
    auto one = run_cardsim("run " + m.string() + " --tokens 4 --seqs 2 --machine");
    INFO(one.out);
    REQUIRE(one.code == 0);
    for (int cards : {2, 4}) {
        auto tp =
            run_cardsim("run " + m.string() + " --tokens 4 --seqs 2 --machine --plan tp --set system.cards=" +
                        std::to_string(cards));
        INFO(cards << " cards:\n" << tp.out);
        REQUIRE(tp.code == 0);
        CHECK(value_of(tp.out, "bit_exact") == "yes");
        CHECK(value_of(tp.out, "max_abs_error") == value_of(one.out, "max_abs_error"));
        CHECK(value_of(tp.out, "kl") == value_of(one.out, "kl"));
    }
}

TEST_CASE("the f32 exchange moves a sixth of the exact exchange's link bytes, and its accuracy is measured") {
    ScratchDir dir("cards-tp-f32");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    auto exact = run_cardsim("run " + m + " --tokens 3 --machine --plan tp --set system.cards=2");
    auto f32 = run_cardsim("run " + m +
                           " --tokens 3 --machine --plan tp --set system.cards=2 "
                           "--set system.exchange=f32");
    INFO(exact.out << f32.out);
    REQUIRE(exact.code == 0);
    REQUIRE(f32.code == 0);
    // Per row-parallel output: 24 bytes of exact part against 4 of f32 (both: the logits' all-gather).
    const double e = std::stod(value_of(exact.out, "link_bytes")),
                 f = std::stod(value_of(f32.out, "link_bytes"));
    CHECK(f < e / 4);
    CHECK(f > e / 8);
    CHECK(contains(f32.out, "bit_exact=unchecked"));
    CHECK(!value_of(f32.out, "max_abs_error").empty());
    CHECK(std::stod(value_of(f32.out, "top1_agreement")) >= 0.99);
}

TEST_CASE("a tensor-parallel split that would not stay exact is refused, naming what") {
    ScratchDir dir("cards-tp-refuse");
    const auto hybrid = (dir.path() / "h").string(), dense = (dir.path() / "d").string();
    REQUIRE(run_cardsim("make-model --arch hybrid-moe --size tiny --seed 1 -o " + hybrid).code == 0);
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --seed 1 -o " + dense).code == 0);
    // Experts are split by layers (pipeline parallel), not by columns.
    auto h =
        run_cardsim("check " + hybrid + " --plan tp --set system.cards=2 --set capabilities.experts=true");
    CHECK(h.code == 1);
    CHECK(contains(h.out, "layer 0 has experts; tensor parallel splits dense MLPs only (--plan ep splits the "
                          "experts by index"));
    // The tiny model's 16 attention columns a card are half a scale block.
    auto d = run_cardsim("run " + dense + " --plan tp --set system.cards=2");
    CHECK(d.code == 1);
    CHECK(contains(d.out, "must be whole blocks of 32"));
    auto eight = run_cardsim("check " + dense + " --plan tp --set system.cards=8");
    CHECK(eight.code == 1);
    CHECK(contains(eight.out, "the 4 query heads must divide by the cards"));
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
    // The system's host time splits as one card's does: setup (checks, elaboration, the DDR
    // images) and the steps, each part of the simulation's whole.
    const double setup = std::stod(value_of(r.out, "host_setup_seconds")),
                 steps = std::stod(value_of(r.out, "host_steps_seconds")),
                 whole = std::stod(value_of(r.out, "host_seconds"));
    CHECK(setup > 0);
    CHECK(steps > 0);
    CHECK(setup + steps <= whole);
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

namespace {

/// DDR bytes the expert matvecs of a trace read, per card (the `ddr=` reads of its ExpertMatvec
/// records).
std::map<int, std::uint64_t> expert_ddr_reads(const std::string& trace) {
    std::ifstream in(trace);
    std::map<int, std::uint64_t> out;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("cmd ", 0) != 0 || line.find(" ExpertMatvec ") == std::string::npos) continue;
        int card = 0;
        if (auto at = line.find(" card="); at != std::string::npos) card = std::stoi(line.substr(at + 6));
        const auto at = line.find(" ddr=");
        REQUIRE(at != std::string::npos);
        std::istringstream channels(line.substr(at + 5, line.find(' ', at + 5) - at - 5));
        for (std::string ch; std::getline(channels, ch, ',');)
            out[card] += std::stoull(ch.substr(0, ch.find('/')));
    }
    return out;
}

} // namespace

TEST_CASE("expert parallel splits each layer's experts by index over 2 and 4 cards, bit-exact, each card "
          "streaming only its own chosen experts and all of them together the one card's") {
    ScratchDir dir("cards-ep");
    for (const std::string arch : {"moe", "hybrid-moe"}) {
        const auto m = (dir.path() / arch).string();
        REQUIRE(run_cardsim("make-model --arch " + arch + " --size small --seed 3 -o " + m).code == 0);
        const std::string run = "run " + m + " --set capabilities.experts=true --seqs 4 --tokens 3 --machine";
        const auto one_trace = (dir.path() / (arch + ".one.trace")).string();
        auto one = run_cardsim(run + " --trace " + one_trace);
        REQUIRE(one.code == 0);
        const auto one_reads = expert_ddr_reads(one_trace);
        REQUIRE(one_reads.size() == 1);
        for (int cards : {2, 4}) {
            const std::string system = run + " --plan ep --set system.cards=" + std::to_string(cards);
            const auto trace = (dir.path() / (arch + std::to_string(cards) + ".trace")).string();
            const auto routing = (dir.path() / (arch + std::to_string(cards) + ".routing")).string();
            auto ep = run_cardsim(system + " --trace " + trace + " --routing-out " + routing);
            INFO(arch << " on " << cards << " cards:\n" << ep.out);
            REQUIRE(ep.code == 0);
            CHECK(contains(ep.out, "bit_exact=yes"));
            CHECK(value_of(ep.out, "max_abs_error") == value_of(one.out, "max_abs_error"));
            CHECK(value_of(ep.out, "kl") == value_of(one.out, "kl"));
            CHECK(value_of(ep.out, "expert_bytes_per_step") == value_of(one.out, "expert_bytes_per_step"));
            // The experts partition over the cards: together they stream exactly the one card's
            // chosen experts (the same routing, bit for bit), each card a share of them.
            const auto reads = expert_ddr_reads(trace);
            REQUIRE(reads.size() == std::size_t(cards));
            std::uint64_t total = 0;
            for (auto& [card, bytes] : reads) {
                CHECK(bytes > 0);
                CHECK(bytes < one_reads.begin()->second);
                total += bytes;
            }
            CHECK(total == one_reads.begin()->second);
            // The summary's busiest card: at least an even share and at least what the trace's
            // busiest card read a step on average, at most every card's.
            const double steps = std::stod(value_of(ep.out, "steps"));
            const double busiest = std::stod(value_of(ep.out, "expert_bytes_busiest_card"));
            const double all = std::stod(value_of(ep.out, "expert_bytes_per_step"));
            std::uint64_t most = 0;
            for (auto& [card, bytes] : reads)
                most = std::max(most, bytes);
            CHECK(busiest >= all / cards);
            CHECK(busiest * steps >= double(most) * (1 - 1e-12));
            CHECK(busiest <= all);
            CHECK(std::stod(value_of(ep.out, "expert_card_imbalance")) >= 1.0);
            // A timing-only run given the routing has the full run's cycles and DDR bytes.
            auto timing = run_cardsim(system + " --timing-only --routing trace:" + routing);
            REQUIRE(timing.code == 0);
            CHECK(value_of(timing.out, "cycles") == value_of(ep.out, "cycles"));
            CHECK(value_of(timing.out, "ddr_bytes") == value_of(ep.out, "ddr_bytes"));
        }
    }
    const auto moe = (dir.path() / "moe").string();
    auto odd =
        run_cardsim("check " + moe + " --set capabilities.experts=true --plan ep --set system.cards=3");
    CHECK(odd.code == 1); // a refusal
    CHECK(contains(odd.out,
                   "expert parallel over 3 cards: the 16 experts of a layer must divide by the cards"));
    // Qwen3-Next-80B-A3B at int8 (78.8 GiB of weights): each card holds a quarter of the experts
    // on 4 cards and fits; on 2 each card's half is over its DDR, and both are named.
    const auto big = (dir.path() / "80b").string();
    REQUIRE(run_cardsim("make-model --arch hybrid-moe --size 80b-a3b --shapes-only -o " + big).code == 0);
    auto four =
        run_cardsim("check " + big + " --set capabilities.experts=true --plan ep --set system.cards=4");
    CHECK(four.code == 0);
    CHECK(contains(four.out, "card 3 of 4 (1/4 of every layer's heads and experts (by index)"));
    auto two =
        run_cardsim("check " + big + " --set capabilities.experts=true --plan ep --set system.cards=2");
    CHECK(two.code == 1);
    CHECK(contains(two.out, "card 0 of 2: the weights need 39.6 GiB at int8"));
    CHECK(contains(two.out, "card 1 of 2: the weights need 39.6 GiB at int8"));
    const auto dense = (dir.path() / "dense").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + dense).code == 0);
    auto none = run_cardsim("run " + dense + " --plan ep --set system.cards=2");
    CHECK(none.code == 1);
    CHECK(contains(none.out, "the model has no experts to split"));
}

TEST_CASE("tensor parallel on 2 cards decodes the 8B shape at least 1.7 times as fast as one card, and "
          "no faster than two cards' DDR roofline") {
    ScratchDir dir("cards-tp-8b");
    const auto m = (dir.path() / "qwen3-8b").string();
    REQUIRE(run_cardsim("make-model --arch dense --size 8b --shapes-only -o " + m).code == 0);
    auto one = run_cardsim("run " + m + " --timing-only --tokens 2 --machine");
    auto two = run_cardsim("run " + m + " --timing-only --tokens 2 --machine --plan tp --set system.cards=2");
    INFO(one.out << two.out);
    REQUIRE(one.code == 0);
    REQUIRE(two.code == 0);
    const double t1 = std::stod(value_of(one.out, "decode_tokens_per_second"));
    const double t2 = std::stod(value_of(two.out, "decode_tokens_per_second"));
    CHECK(t2 >= 1.7 * t1);
    // One card's decode at its whole DDR roofline, twice over, bounds two cards that split its bytes.
    const double roofline = t1 / std::stod(value_of(one.out, "roofline_fraction"));
    CHECK(t2 <= 2 * roofline);
}

TEST_CASE("Llama-3.1-70B at int8 splits by heads over 4 cards, and a card over its DDR is refused by name") {
    ScratchDir dir("cards-tp-70b");
    const auto m = dir.path() / "llama-70b";
    std::filesystem::create_directories(m);
    // The published config.json of Llama-3.1-70B (its shape: the weights are not needed to check it).
    std::ofstream(m / "config.json")
        << R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":8192,)"
           R"("intermediate_size":28672,"num_hidden_layers":80,"num_attention_heads":64,)"
           R"("num_key_value_heads":8,"head_dim":128,"vocab_size":128256,"rms_norm_eps":1e-05,)"
           R"("rope_theta":500000.0,"max_position_embeddings":131072,"tie_word_embeddings":false,)"
           R"("hidden_act":"silu","attention_bias":false,"mlp_bias":false,"torch_dtype":"bfloat16"})";
    const auto base = "check " + m.string() + " --shapes-only --plan tp ";
    // Each card of two keeps half of every layer and the whole embedding: 34.4 GiB, over 32 GiB.
    auto two = run_cardsim(base + "--set system.cards=2");
    INFO(two.out);
    CHECK(two.code == 1);
    CHECK(contains(two.out, "card 0 of 2: the weights need 34.4 GiB at int8"));
    CHECK(contains(two.out, "card 1 of 2: the weights need 34.4 GiB at int8"));
    auto four = run_cardsim(base + "--set system.cards=4");
    INFO(four.out);
    CHECK(four.code == 0);
    CHECK(contains(four.out, "card 3 of 4 (1/4 of every layer's heads and MLP columns; "));
    CHECK(contains(four.out, " commands a step):"));
    CHECK(contains(four.out, "weights (int8): 17.7 GiB"));
    // With two channels a card (16 GiB) the same split no longer fits: every card is named.
    auto small = run_cardsim(base + "--set system.cards=4 --set ddr.channels=2");
    CHECK(small.code == 1);
    for (int k = 0; k < 4; ++k)
        CHECK(contains(small.out, "card " + std::to_string(k) + " of 4: the weights need 17.7 GiB at int8"));
}

TEST_CASE("a system run writes one trace, each record carrying its card and each link its messages, "
          "whose totals are the run's; trace diff compares two systems card by card") {
    ScratchDir dir("cards-trace");
    const auto m = (dir.path() / "m").string();
    auto at = [&](const std::string& f) { return (dir.path() / f).string(); };
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    const std::string tp = " --tokens 2 --set system.cards=2 --plan tp --machine";
    auto r = run_cardsim("run " + m + tp + " --trace " + at("a.trace") + " --perfetto " + at("a.json") +
                         " --vcd " + at("a.vcd") + " --csv " + at("a.csv") + " --report " + at("a.html"));
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "bit_exact=yes"));
    auto t = cardsim::traces::read_trace(at("a.trace"));
    REQUIRE(t.header.cards.size() == 2);
    CHECK(t.header.links.size() == 2);
    std::size_t per_card[2] = {0, 0}, link_waits = 0;
    for (auto& rec : t.records) {
        REQUIRE(rec.card);
        REQUIRE(*rec.card < 2);
        ++per_card[*rec.card];
        if ((rec.opcode == "Recv" || rec.opcode == "RecvAdd") && rec.split &&
            (*rec.split)[cardsim::traces::TimePart::Link] > 0)
            ++link_waits;
    }
    CHECK(per_card[0] > 0);
    CHECK(per_card[1] > 0);
    CHECK(link_waits > 0); // a receive's wait for its message is its link part
    // The messages are the links' traffic: their bytes are the run's link bytes, and their busy
    // cycles its busy seconds (each message's interval rounded out to whole cycles: at most 2 more).
    REQUIRE(!t.messages.empty());
    std::uint64_t bytes = 0, busy = 0;
    for (auto& msg : t.messages) {
        bytes += msg.bytes;
        busy += msg.duration();
    }
    CHECK(std::to_string(bytes) == value_of(r.out, "link_bytes"));
    const double busy_cycles = std::stod(value_of(r.out, "link_busy_seconds")) * t.header.clock_mhz * 1e6;
    CHECK(double(busy) >= busy_cycles - 1);
    CHECK(double(busy) <= busy_cycles + 2.0 * double(t.messages.size()));

    auto show = run_cardsim("trace show " + at("a.trace"));
    CHECK(show.code == 0);
    CHECK(contains(show.out, "system: 2 cards, 2 links"));
    CHECK(contains(show.out, "link 0 -> 1 (2 ports): "));
    CHECK(contains(show.out, "card1.matvec"));
    std::ifstream json(at("a.json"));
    std::stringstream perfetto;
    perfetto << json.rdbuf();
    CHECK(contains(perfetto.str(), "cardsim card 1 (program "));
    CHECK(contains(perfetto.str(), "link 1 -> 0 (2 ports)"));
    std::ifstream page(at("a.html"));
    std::stringstream html;
    html << page.rdbuf();
    CHECK(contains(html.str(), "id=\"system-links\""));

    // Two traces of the same system compare card by card; a faster link differs on the links.
    auto same = run_cardsim("trace diff " + at("a.trace") + " " + at("a.trace"));
    CHECK(same.code == 0);
    CHECK(contains(same.out, "traces agree: 2 cards"));
    REQUIRE(run_cardsim("run " + m + tp + " --set link.gbps=100 --trace " + at("b.trace")).code == 0);
    auto faster = run_cardsim("trace diff " + at("a.trace") + " " + at("b.trace") + " --format json");
    CHECK(faster.code == 1);
    CHECK(contains(faster.out, "\"format\":\"cardsim-trace-diff-system\""));
    CHECK(contains(faster.out, "link 0 -> 1 differs"));
    // The diff page of two systems: the links, then a section per card.
    auto page_of_two = run_cardsim("report " + at("a.trace") + " " + at("b.trace") + " -o " + at("d.html"));
    CHECK(page_of_two.code == 0);
    std::ifstream diff_page(at("d.html"));
    std::stringstream diff_html;
    diff_html << diff_page.rdbuf();
    CHECK(contains(diff_html.str(), "id=\"link-table\""));
    CHECK(contains(diff_html.str(), "<section id=\"card-1\">"));
    CHECK(contains(diff_html.str(), "id=\"card1-unit-table\""));
    // A one-card trace against a system's is refused, saying why, by the diff and its page.
    REQUIRE(run_cardsim("run " + m + " --tokens 2 --trace " + at("one.trace")).code == 0);
    auto mixed = run_cardsim("trace diff " + at("one.trace") + " " + at("a.trace"));
    CHECK(mixed.code == 2);
    CHECK(contains(mixed.out, "A is a trace of one card and B a system of 2 cards"));
    auto mixed_page = run_cardsim("report " + at("one.trace") + " " + at("a.trace") + " -o " + at("m.html"));
    CHECK(mixed_page.code == 2);
    CHECK(contains(mixed_page.out, "A is a trace of one card and B a system of 2 cards"));
    CHECK_FALSE(std::filesystem::exists(at("m.html")));
    // The f32 exchange's ring reduce-scatter receives (RecvAdd) wait on the link too.
    REQUIRE(run_cardsim("run " + m + tp + " --set system.exchange=f32 --trace " + at("f.trace")).code == 0);
    std::size_t add_waits = 0;
    for (auto& rec : cardsim::traces::read_trace(at("f.trace")).records)
        if (rec.opcode == "RecvAdd" && rec.split && (*rec.split)[cardsim::traces::TimePart::Link] > 0)
            ++add_waits;
    CHECK(add_waits > 0);
}

TEST_CASE("a tp×pp system's trace holds every card and every hop of its links, microbatched or not") {
    ScratchDir dir("cards-trace-tpp");
    const auto m = (dir.path() / "m").string();
    auto at = [&](const std::string& f) { return (dir.path() / f).string(); };
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 3 -o " + m).code == 0);
    for (const std::string extra : {"", " --seqs 4 --microbatches 2"}) {
        INFO(extra);
        auto r =
            run_cardsim("run " + m + " --tokens 2 --set system.cards=4 --plan tp2xpp2 --machine --trace " +
                        at("t.trace") + extra);
        INFO(r.out);
        REQUIRE(r.code == 0);
        auto t = cardsim::traces::read_trace(at("t.trace"));
        REQUIRE(t.header.cards.size() == 4);
        std::size_t cards_seen[4] = {0, 0, 0, 0};
        for (auto& rec : t.records)
            ++cards_seen[rec.card.value()];
        for (auto n : cards_seen)
            CHECK(n > 0);
        std::uint64_t bytes = 0;
        for (auto& msg : t.messages)
            bytes += msg.bytes;
        CHECK(std::to_string(bytes) == value_of(r.out, "link_bytes")); // a forwarded message: each hop
        auto same = run_cardsim("trace diff " + at("t.trace") + " " + at("t.trace"));
        CHECK(same.code == 0);
    }
}

TEST_CASE("check refuses a split by heads of a model that is not a decoder, as run does, and grants pp") {
    ScratchDir dir("cards-encoder");
    const auto e = (dir.path() / "e").string();
    REQUIRE(run_cardsim("make-model --arch encoder --size tiny --seed 1 -o " + e).code == 0);
    const std::string config = " --config " + std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    for (const std::string plan :
         {"tp --set system.cards=2", "ep --set system.cards=2", "tp×pp --set system.cards=4"}) {
        auto check = run_cardsim("check " + e + config + " --plan " + plan);
        auto run = run_cardsim("run " + e + config + " --timing-only --plan " + plan);
        INFO(plan << ":\n" << check.out << run.out);
        CHECK(check.code == 1);
        CHECK(contains(check.out, "this model is not a decoder"));
        CHECK(run.code == 2);
        CHECK(contains(run.out, "this model is not a decoder"));
    }
    auto pp = run_cardsim("check " + e + config + " --plan pp --set system.cards=2");
    CHECK(pp.code == 0);
    CHECK(run_cardsim("run " + e + config + " --timing-only --plan pp --set system.cards=2").code == 0);
    // Each card's layers and budget, as `compile --plan pp` splits them: the same ops per card.
    INFO(pp.out);
    CHECK(contains(pp.out, "card 0 of 2 (ops 0 .. "));
    CHECK(contains(pp.out, "card 1 of 2 (ops "));
    const auto out = (dir.path() / "p.cardsim").string();
    auto compiled = run_cardsim("compile " + e + config + " --plan pp --set system.cards=2 -o " + out);
    INFO(compiled.out);
    REQUIRE(compiled.code == 0);
    for (int k : {0, 1}) {
        const auto from = [&](const std::string& text, const std::string& head) {
            const auto at = text.find(head);
            if (at == std::string::npos) return std::string();
            const auto ops = text.find("ops ", at);
            return text.substr(ops, text.find(',', ops) - ops);
        };
        const std::string checked = from(pp.out, "card " + std::to_string(k) + " of 2 (");
        CHECK_FALSE(checked.empty());
        CHECK(checked == from(compiled.out, "card " + std::to_string(k) + " of 2, "));
    }
}

TEST_CASE("check and compile under a plan refuse the systems a run refuses: no wiring, no route") {
    ScratchDir dir("cards-network");
    const auto m = (dir.path() / "m").string(); // small: its heads split over 4 cards in whole blocks
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 1 -o " + m).code == 0);
    const auto out = (dir.path() / "p.cardsim").string();
    for (const auto& [system, why] : std::vector<std::pair<std::string, std::string>>{
             {"--set system.cards=4 --set system.topology=pairs", "has no route from card"},
             {"--set system.cards=4 --set link.ports=1", "needs two ports a card"},
             {"--set system.cards=4 --set link.ports=3", "would leave one idle"},
             {"--set system.cards=2 --set link.switch_latency_ns=100", "has no switch"}}) {
        const std::string args = m + " --plan tp " + system;
        auto check = run_cardsim("check " + args);
        auto compile = run_cardsim("compile " + args + " -o " + out);
        auto run = run_cardsim("run " + args + " --timing-only --tokens 1");
        INFO(system << ":\n" << check.out << compile.out << run.out);
        CHECK(check.code == 1);
        CHECK(contains(check.out, why));
        CHECK(contains(check.out, "verdict: the card refuses this model"));
        CHECK(compile.code == 2);
        CHECK(contains(compile.out, why));
        CHECK_FALSE(std::filesystem::exists(out + ".card0"));
        CHECK(run.code == 2);
        CHECK(contains(run.out, why));
    }
    // Four ports on a ring of four: two to each neighbour, twice a port's rate (the links less busy).
    auto two = run_cardsim("run " + m + " --plan tp --set system.cards=4 --timing-only --tokens 2");
    auto four = run_cardsim("run " + m +
                            " --plan tp --set system.cards=4 --set link.ports=4 --timing-only --tokens 2");
    INFO(two.out << four.out);
    REQUIRE(two.code == 0);
    REQUIRE(four.code == 0);
    CHECK(contains(two.out, "link 0 -> 1 (1 port)"));
    CHECK(contains(four.out, "link 0 -> 1 (2 ports)"));
}

TEST_CASE("check budgets a pipeline's cards as run steps them: in microbatches, each card's own arena") {
    ScratchDir dir("cards-check-micro");
    const auto dense = (dir.path() / "d").string(), hybrid = (dir.path() / "h").string();
    REQUIRE(run_cardsim("make-model --arch dense --size small --seed 1 -o " + dense).code == 0);
    REQUIRE(run_cardsim("make-model --arch hybrid --size small --seed 1 -o " + hybrid).code == 0);
    // Microbatches keep a store of every sequence besides the group's: the DDR a run needs, refused alike.
    const std::string tight = " --set ddr.channels=1 --set ddr.capacity_mib=1 --set system.cards=2 --plan pp "
                              "--seqs 2 --max-positions 300";
    auto check = run_cardsim("check " + dense + tight);
    auto run = run_cardsim("run " + dense + tight + " --tokens 2 --no-reference");
    INFO(check.out << run.out);
    CHECK(check.code == 1);
    CHECK(run.code == 1);
    CHECK(contains(check.out, "of 3 sequences"));
    CHECK(contains(run.out, "of 3 sequences"));
    // A group's arena is smaller than the whole step's: what a run fits, check grants.
    const std::string small_sram = " --set system.cards=2 --plan pp --set sram.bytes=20479 --seqs 4";
    auto granted = run_cardsim("check " + hybrid + small_sram);
    auto ran = run_cardsim("run " + hybrid + small_sram + " --tokens 2 --no-reference");
    INFO(granted.out << ran.out);
    CHECK(granted.code == 0);
    CHECK(ran.code == 0);
}

TEST_CASE(
    "link_utilisation is the busiest link's busy fraction of the run, as serve reports it, not a mean") {
    ScratchDir dir("cards-link-utilisation");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch moe --size small --seed 2 -o " + m).code == 0);
    // Expert parallel within pipeline stages: the stages' links carry far more than the hop between.
    const std::string run = "run " + m +
                            " --set capabilities.experts=true --set system.cards=4 --plan ep×pp --seqs 4 "
                            "--microbatches 1 --tokens 2 --timing-only";
    auto text = run_cardsim(run);
    auto machine = run_cardsim(run + " --machine");
    INFO(text.out);
    REQUIRE(text.code == 0);
    REQUIRE(machine.code == 0);
    std::vector<double> busy;
    const std::regex link_line(R"(  link .* busy [0-9.]+ ms \(([0-9.]+) % of the run\))");
    for (std::sregex_iterator i(text.out.begin(), text.out.end(), link_line), end; i != end; ++i)
        busy.push_back(std::stod((*i)[1]));
    REQUIRE(busy.size() >= 3);
    const double busiest = *std::max_element(busy.begin(), busy.end());
    const double least = *std::min_element(busy.begin(), busy.end());
    REQUIRE(busiest > 2 * least); // a mean would differ from the busiest link
    CHECK(std::abs(100 * std::stod(value_of(machine.out, "link_utilisation")) - busiest) < 0.006);
}

TEST_CASE(
    "a phase whose busiest link takes longer than its DDR roofline and its busiest unit is link-bound") {
    ScratchDir dir("cards-link-bound");
    const auto m = (dir.path() / "m").string();
    REQUIRE(run_cardsim("make-model --arch moe --size small --seed 2 -o " + m).code == 0);
    // Expert parallel over 4 cards: every Moe layer's rows cross the links, its experts' weights are
    // a quarter a card.
    const std::string run = "run " + m +
                            " --set capabilities.experts=true --set system.cards=4 --plan ep --timing-only "
                            "--prompt-len 64 --chunk 16 --tokens 3";
    auto text = run_cardsim(run);
    auto machine = run_cardsim(run + " --machine");
    INFO(text.out);
    REQUIRE(text.code == 0);
    REQUIRE(machine.code == 0);
    CHECK(value_of(machine.out, "prefill_bound") == "link");
    CHECK(contains(text.out, "link-bound (DDR roofline "));
    CHECK(contains(text.out, "; busiest link "));
    // One card has no link: its bound is the DDR's or a unit's, and names no link.
    auto one = run_cardsim("run " + m +
                           " --set capabilities.experts=true --timing-only --prompt-len 64 --chunk 16 "
                           "--tokens 3 --machine");
    REQUIRE(one.code == 0);
    CHECK(value_of(one.out, "prefill_bound") != "link");
}
