// `cardsim check` gives one verdict, its last line: a model over the DDR capacity or with an arena
// over the SRAM is refused there, never "runs" first and refused after.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <string>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// How many times `part` occurs in `text`.
std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++n;
    return n;
}

/// The last non-empty line of `text`.
std::string last_line(const std::string& text) {
    auto end = text.find_last_not_of('\n');
    auto start = text.rfind('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1,
                       end - (start == std::string::npos ? 0 : start + 1) + 1);
}

} // namespace

TEST_CASE("check of a model over the DDR capacity gives one verdict, the refusal, last") {
    ScratchDir d("check-one-verdict");
    const auto m = make_model(d, "dense");
    auto r = run_cardsim("check " + m + " --set ddr.capacity_mib=1 --max-positions 200000");
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(count(r.out, "verdict: ") == 1);
    CHECK_FALSE(contains(r.out, "the card runs this model"));
    CHECK(contains(r.out, "does not fit"));
    CHECK(contains(r.out, "refusals:\n  model: the weights need"));
    CHECK(last_line(r.out) == "verdict: the card refuses this model (1 refusal)");
    // The same model within the capacity: one verdict, that it runs.
    auto ok = run_cardsim("check " + m);
    CHECK(ok.code == 0);
    CHECK(count(ok.out, "verdict: ") == 1);
    CHECK(last_line(ok.out).rfind("verdict: the card runs this model", 0) == 0);
}

TEST_CASE("check of a model whose arena is over the SRAM refuses the model as a whole") {
    ScratchDir d("check-sram");
    const auto m = make_model(d, "dense");
    auto r = run_cardsim("check " + m + " --set sram.bytes=1");
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(count(r.out, "verdict: ") == 1);
    CHECK(contains(r.out, "  model: the arena needs"));
    CHECK(last_line(r.out) == "verdict: the card refuses this model (1 refusal)");
}

TEST_CASE("check --seqs S holds the arena of a step of S sequences to the SRAM, in its one verdict") {
    ScratchDir d("check-sram-seqs");
    const auto m = make_model(d, "hybrid");
    // The tiny hybrid's arena: 896 bytes for one sequence, more for four.
    const std::string sram = " --set sram.bytes=1024";
    auto one = run_cardsim("check " + m + sram);
    CHECK(one.code == 0);
    auto four = run_cardsim("check " + m + sram + " --seqs 4");
    INFO(four.out);
    CHECK(four.code == 1);
    CHECK(count(four.out, "verdict: ") == 1);
    CHECK_FALSE(contains(four.out, "refused: ")); // no error after the listing: the verdict says it
    CHECK(contains(four.out, "  model: the arena needs"));
    CHECK(last_line(four.out) == "verdict: the card refuses this model (1 refusal)");
    // run gives the same refusal.
    auto run = run_cardsim("run " + m + sram + " --seqs 4 --tokens 1");
    CHECK(run.code == 1);
    CHECK(contains(run.out, "the arena needs"));
}

TEST_CASE("check of a model on a card config that does not fit the chip says so on the verdict line") {
    ScratchDir d("check-no-fit");
    const auto m = make_model(d, "dense");
    // A kernel clock far above any Fmax the fit model estimates: the card config does not fit.
    auto r = run_cardsim("check " + m + " --set clock.kernel_mhz=900");
    INFO(r.out);
    CHECK(r.code == 0); // the verdict is the model's: the card runs it
    CHECK(contains(r.out, "fit: no: "));
    CHECK(count(r.out, "verdict: ") == 1);
    CHECK(last_line(r.out).rfind("verdict: the card runs this model", 0) == 0);
    CHECK(contains(last_line(r.out), "but this card config does not fit the chip"));
    // A card that fits says nothing of the kind.
    auto ok = run_cardsim("check " + m);
    CHECK(contains(ok.out, "fit: yes"));
    CHECK_FALSE(contains(ok.out, "does not fit the chip"));
}

TEST_CASE("check weighs an encoder's arena as run lowers it, on one card and on each card of a pipeline") {
    const ScratchDir d("check-encoder-arena");
    const auto e = (d / "e").string();
    REQUIRE(run_cardsim("make-model --arch encoder --size tiny --seed 1 -o " + e).code == 0);
    const std::string card = " --config " + std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    for (const std::string system : {"", " --set system.cards=2 --plan pp"}) {
        const std::string small = card + " --set sram.bytes=1000" + system;
        auto check = run_cardsim("check " + e + small);
        auto run = run_cardsim("run " + e + small);
        INFO(system << "\n" << check.out << run.out);
        CHECK(check.code == 1);
        CHECK(contains(check.out, "the arena needs"));
        CHECK(run.code == 1);
        CHECK(contains(run.out, "the arena needs"));
        CHECK(run_cardsim("check " + e + card + system).code == 0);
    }
}

TEST_CASE("compile writes an encoder only the bucket a run can feed: one sequence, its markers") {
    const ScratchDir d("compile-encoder-bucket");
    const auto e = (d / "e").string();
    REQUIRE(run_cardsim("make-model --arch encoder --size tiny --seed 1 -o " + e).code == 0);
    const std::string card = " --config " + std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    const auto prog = (d / "p").string();
    // The default bucket (one token) takes its marker, so a one-id prompt runs it.
    REQUIRE(run_cardsim("compile " + e + card + " -o " + prog).code == 0);
    auto one = run_cardsim("run " + prog + card + " --model " + e + " --prompt 1");
    INFO(one.out);
    CHECK(one.code == 0);
    CHECK(contains(one.out, "bit-exact: yes"));
    auto seqs = run_cardsim("compile " + e + card + " --bucket seqs=3 -o " + prog + "3");
    CHECK(seqs.code == 2);
    CHECK(contains(seqs.out, "an encoder runs one sequence"));
    auto markers = run_cardsim("compile " + e + card + " --bucket tokens=4,markers=2 -o " + prog + "m");
    CHECK(markers.code == 2);
    CHECK(contains(markers.out, "gathers 1 markers"));
}

TEST_CASE("check budgets a pipeline's step in the microbatches run steps it in, says so, and takes "
          "--microbatches as run does") {
    const ScratchDir d("check-microbatches");
    const auto m = make_model(d, "dense");
    // At 4096 bytes of SRAM a step of 4 rows fits, one of 8 rows does not.
    const std::string card = " --set system.cards=2 --plan pp --set sram.bytes=4096 --seqs 8";
    for (const char* mb : {"", " --microbatches 2", " --microbatches 1"}) {
        auto check = run_cardsim("check " + m + card + mb);
        auto run = run_cardsim("run " + m + card + mb + " --tokens 2 --timing-only");
        INFO(mb << "\n" << check.out << run.out);
        const bool fits = std::string(mb) != " --microbatches 1";
        CHECK(check.code == (fits ? 0 : 1));
        CHECK(run.code == (fits ? 0 : 1));
        CHECK(contains(check.out, fits ? "a step, as run steps it: 8 sequences in 2 microbatches of 4 rows"
                                       : "a step, as run steps it: 8 sequences in 1 microbatch of 8 rows"));
    }
    // serve's step of a lane's 8 rows is refused as check refuses it, naming the card.
    auto serve =
        run_cardsim("serve " + m +
                    " --set system.cards=2 --plan pp --set sram.bytes=4096 --token-budget 8 --gen poisson "
                    "--count 2 --prompt-len 4 --output-len 2");
    INFO(serve.out);
    CHECK(serve.code == 1);
    CHECK(contains(serve.out, "card 0 of 2: the arena needs 7168 bytes"));
    auto odd = run_cardsim("check " + m + card + " --microbatches 3");
    CHECK(odd.code == 2);
    CHECK(contains(odd.out, "--microbatches 3: a step's 8 sequences split into equal groups"));
    auto tp = run_cardsim("check " + m + " --set system.cards=2 --plan tp --seqs 8 --microbatches 2");
    CHECK(tp.code == 2);
    CHECK(contains(tp.out, "microbatches fill the stages of a pipeline"));
}
