// The f64 accuracy metric: a run whose logits are the f64 reference's own (rounded to f32) scores
// full agreement with errors at f32 rounding, and a run that differs shows by how much.

#include "models/accuracy.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim::models;
using namespace cardsim::models::test;

namespace {

std::vector<float> f32(const std::vector<double>& x) {
    return {x.begin(), x.end()};
}

/// The largest |x| of `x`.
double largest(const std::vector<double>& x) {
    double m = 0;
    for (double v : x)
        m = std::max(m, std::fabs(v));
    return m;
}

} // namespace

TEST_CASE("a decoder run with the reference's logits agrees on every generating step") {
    ScratchDir d("accuracy-decoder");
    tiny(SynthArch::Dense, d / "model");
    const Model m = load_model(d / "model");
    const DecoderReference ref(m.checkpoint);
    const std::vector<std::int64_t> prompt{1, 17, 42};
    auto greedy = ref.greedy(prompt, 4);
    std::vector<std::uint32_t> tokens(prompt.begin(), prompt.end());
    tokens.insert(tokens.end(), greedy.tokens.begin(), greedy.tokens.end());
    // A step a token fed; the token after the last step is the one it chose.
    std::vector<std::int64_t> fed(tokens.begin(), tokens.end() - 1);
    auto want = ref.prompt_logits(fed);
    std::vector<std::vector<float>> logits;
    double scale = 0;
    for (auto& w : want) {
        logits.push_back(f32(w));
        scale = std::max(scale, largest(w));
    }
    auto a = accuracy(m, logits, tokens, prompt.size(), {});
    REQUIRE(a.steps == fed.size() - prompt.size() + 1);
    REQUIRE(a.top1_agreement == 1.0);
    REQUIRE(a.max_abs_error <= scale * 0x1p-24);
    REQUIRE(a.kl < 1e-12);

    logits.back()[5] += 1.0f; // the last step's logit 5 off by one
    auto b = accuracy(m, logits, tokens, prompt.size(), {});
    REQUIRE(b.max_abs_error == Approx(1.0).margin(scale * 0x1p-23));
    REQUIRE(b.kl > a.kl);
}

TEST_CASE("an encoder run with the reference's marker logits agrees, one step") {
    ScratchDir d("accuracy-encoder");
    tiny(SynthArch::Encoder, d / "model");
    const Model m = load_model(d / "model");
    const EncoderReference ref(m.checkpoint);
    const std::vector<std::uint32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<std::size_t> markers{0, 4};
    std::vector<std::int64_t> toks(tokens.begin(), tokens.end());
    auto want = ref.run(toks, 0, markers).marker_logits;
    std::vector<std::vector<float>> logits{f32(want)};
    auto a = accuracy(m, logits, tokens, 0, markers);
    REQUIRE(a.steps == 1);
    REQUIRE(a.top1_agreement == 1.0);
    REQUIRE(a.max_abs_error <= largest(want) * 0x1p-24);
}
