// `cardsim check` (and `run`) as a user runs them on generated Mistral (windowed), Gemma-2
// (softcap) and DeepSeek-V3 (mla) checkpoints: exit codes and the exact refusal lines.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// The refusals and the verdict line of `out`, from "refusals:" to the verdict (the fit line between
/// them is another test's).
std::string refusal_block(const std::string& out) {
    auto at = out.find("refusals:\n");
    if (at == std::string::npos) return {};
    auto verdict = out.find("verdict: ", at);
    auto end = verdict == std::string::npos ? std::string::npos : out.find('\n', verdict);
    std::string block = out.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
    if (auto fit = block.find("\nfit: "); fit != std::string::npos)
        block.erase(fit + 1, block.find('\n', fit + 1) - fit);
    return block;
}

const std::string VARIANTS = "the engine's attention takes no mask, window, sink or soft cap";
const std::string WINDOW = "the engine's attention takes no window";

} // namespace

TEST_CASE("check refuses a windowed model for its windows, and a card with windows alone runs it") {
    const ScratchDir d("check-archs");
    auto m = make_model(d, "windowed");
    auto r = run_cardsim("check " + m);
    INFO(r.out);
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, ": dense decoder (mistral) with sliding windows\n"));
    REQUIRE(refusal_block(r.out) == "refusals:\n"
                                    "  layer 0, attention: " +
                                        WINDOW +
                                        "\n"
                                        "  layer 0, attention: the engine has no unit for a sliding window\n"
                                        "  layer 1, attention: " +
                                        WINDOW +
                                        "\n"
                                        "  layer 1, attention: the engine has no unit for a sliding window\n"
                                        "verdict: the card refuses this model (4 refusals)\n");
    // configs/encoder.toml's windowed attention unit is the encoder's self attention, not attention
    // over a decoder's cache: the same refusals.
    auto enc =
        run_cardsim("check " + m + " --config " + std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml");
    REQUIRE(enc.code == 1);
    REQUIRE(refusal_block(enc.out) == refusal_block(r.out));
    // Its attention uses a window and no other variant: windows are all it needs of the class.
    const std::string features = " --set units.attention.window=true";
    auto ok = run_cardsim("check " + m + features);
    INFO(ok.out);
    REQUIRE(ok.code == 0);
    REQUIRE(contains(ok.out, "verdict: the card runs this model"));
    auto ran = run_cardsim("run " + m + features + " --tokens 6");
    INFO(ran.out);
    REQUIRE(ran.code == 0);
    REQUIRE(contains(ran.out, "bit-exact: yes"));
}

TEST_CASE("check refuses a soft-capped model for its scale, caps, windows and GELU") {
    const ScratchDir d("check-archs");
    auto r = run_cardsim("check " + make_model(d, "softcap"));
    INFO(r.out);
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, ": dense decoder (gemma2) with soft caps, sliding windows\n"));
    REQUIRE(refusal_block(r.out) ==
            "refusals:\n"
            "  embedding: the engine reads its embedding unscaled\n"
            "  embedding: the engine has no unit for an embedding scale\n"
            "  layer 0, attention: the engine's attention takes no window or soft cap\n"
            "  layer 0, attention: the engine has no unit for a sliding window\n"
            "  layer 0, ffn: the engine has no unit for GELU\n"
            "  layer 1, attention: the engine's attention takes no soft cap\n"
            "  layer 1, attention: the engine has no unit for soft-capped scores\n"
            "  layer 1, ffn: the engine has no unit for GELU\n"
            "  head: " +
                VARIANTS +
                "\n"
                "  head: the engine has no unit for a logit soft cap\n"
                "verdict: the card refuses this model (10 refusals)\n");
}

TEST_CASE("check refuses an MLA model for its latent attention and interleaved rotary") {
    const ScratchDir d("check-archs");
    auto m = make_model(d, "mla");
    auto r = run_cardsim("check " + m);
    INFO(r.out);
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, ": dense decoder (deepseek_v3) with multi-head latent attention\n"));
    REQUIRE(refusal_block(r.out) ==
            "refusals:\n"
            "  layer 0, attention: the engine has no unit for an interleaved rotary embedding\n"
            "  layer 0, attention: the engine has no unit for multi-head latent attention\n"
            "  layer 1, attention: the engine has no unit for an interleaved rotary embedding\n"
            "  layer 1, attention: the engine has no unit for multi-head latent attention\n"
            "verdict: the card refuses this model (4 refusals)\n");
    REQUIRE(run_cardsim("run " + m).code == 1); // refused as check refuses: the sentences on stderr
}

TEST_CASE("gpt-oss: check names what the card lacks, and a card that adds YaRN, the clamped SwiGLU, "
          "biases, sinks and windows runs it bit-exact, its accuracy measured against the f64 reference") {
    const ScratchDir d("check-archs");
    auto m = make_model(d, "gpt-oss");
    const std::string features = " --set capabilities.experts=true --set units.attention.window=true --set "
                                 "units.attention.sinks=true --set units.attention.softcap=true --set "
                                 "units.matvec.bias=true";
    auto r = run_cardsim("check " + m + features);
    INFO(r.out);
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, ": dense decoder with experts (gpt_oss) with sliding windows\n"));
    REQUIRE(refusal_block(r.out) ==
            "refusals:\n"
            "  layer 0, attention: the engine has no unit for YaRN rotary scaling (`units.rotation.yarn`)\n"
            "  layer 0, ffn: the engine has no unit for a clamped SwiGLU (`units.silu_mul.clamp`)\n"
            "  layer 1, attention: the engine has no unit for YaRN rotary scaling (`units.rotation.yarn`)\n"
            "  layer 1, ffn: the engine has no unit for a clamped SwiGLU (`units.silu_mul.clamp`)\n"
            "verdict: the card refuses this model (4 refusals)\n");
    auto refused = run_cardsim("run " + m + features + " --tokens 2");
    CHECK(refused.code == 1);
    CHECK(contains(refused.out, "layer 0, ffn: the engine has no unit for a clamped SwiGLU"));
    const std::string all = features + " --set units.rotation.yarn=true --set units.silu_mul.clamp=true";
    auto ok = run_cardsim("check " + m + all);
    CHECK(ok.code == 0);
    auto ran = run_cardsim("run " + m + all + " --tokens 4 --seqs 2 --machine");
    INFO(ran.out);
    REQUIRE(ran.code == 0);
    CHECK(contains(ran.out, "bit_exact=yes"));
    CHECK(contains(ran.out, "max_abs_error="));
    // The published shapes: gpt-oss-20b's 24 layers alternate windows of 128.
    auto big = (d / "20b").string();
    auto w = run_cardsim("make-model --arch gpt-oss --size 20b --shapes-only -o " + big);
    INFO(w.out);
    REQUIRE(w.code == 0);
    CHECK(contains(w.out, "the published openai/gpt-oss-20b shape, dense decoder with experts (gpt_oss)"));
    auto small = run_cardsim("make-model --arch gpt-oss --size 0.1b -o " + (d / "x").string());
    CHECK(small.code == 2);
    CHECK(contains(small.out, "make-model writes --arch gpt-oss in tiny or small, not 0.1b"));
}
