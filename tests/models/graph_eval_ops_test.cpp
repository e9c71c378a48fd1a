// The f64 graph evaluator on ops no builder emits (the refusable ones, attention sinks and soft
// caps, windows), against values worked out by hand from the ops' doc comments.

#include "engine/error.hpp"
#include "models/checkpoint.hpp"
#include "models/graph_eval.hpp"
#include "models/safetensors_writer.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim;
using namespace cardsim::models;
using namespace cardsim::models::test;
using namespace cardsim::graph;

namespace {

/// A checkpoint of `embed` [3, 2] = rows [1, −2], [0.5, 3], [2, 0.25], `sinks` [1] = 0.5 and
/// `heads` [2, 1, 1] = 2, 3.
Checkpoint fixture(const ScratchDir& d) {
    std::filesystem::create_directories(d / "ck");
    write_file(d / "ck" / "config.json", "{}");
    write_safetensors(
        d / "ck" / "model.safetensors",
        {{"embed", Dtype::F64, {3, 2}}, {"heads", Dtype::F64, {2, 1, 1}}, {"sinks", Dtype::F64, {1}}},
        {{1, -2, 0.5, 3, 2, 0.25}, {2, 3}, {0.5}});
    return Checkpoint::open(d / "ck");
}

} // namespace

TEST_CASE("the evaluator's elementwise refusable ops follow their doc comments", "[models][eval]") {
    ScratchDir d("eval-elem");
    const auto c = fixture(d);
    BuiltGraph b;
    Graph& g = b.graph;
    const Val x = g.val(Rows::Tokens, 2, "x"), s = g.val(Rows::Tokens, 2, "scaled"),
              cap = g.val(Rows::Tokens, 2, "capped");
    const Val ge = g.val(Rows::Tokens, 2, "gelu"), re = g.val(Rows::Tokens, 2, "relu"),
              hm = g.val(Rows::Tokens, 2, "hm");
    const Val am = g.val(Rows::Tokens, 1, "argmax");
    g.push(Embed{{c.require("embed"), Whole{false}}, x});
    g.push(Scale{x, 2.0, s});
    g.push(Softcap{s, 1.5, cap});
    g.push(Gelu{x, ge});
    g.push(Relu{x, re});
    g.push(HeadMatmul{x, {c.require("heads"), Whole{false}}, 2, hm});
    g.push(ArgMax{x, am});
    REQUIRE_FALSE(check(g));
    GraphEvaluator eval(b, c);
    const DecodeRow row{0, 0};
    eval.step(std::span(&row, 1));
    CHECK(eval.value(s).data == std::vector<double>{2, -4});
    CHECK(eval.value(cap).at(0, 0) == Approx(1.5 * std::tanh(2 / 1.5)));
    CHECK(eval.value(cap).at(0, 1) == Approx(1.5 * std::tanh(-4 / 1.5)));
    CHECK(eval.value(ge).at(0, 0) == Approx(0.5 * (1 + std::erf(1 / std::sqrt(2.0)))));
    CHECK(eval.value(re).data == std::vector<double>{1, 0});
    CHECK(eval.value(hm).data == std::vector<double>{2, -6});
    CHECK(eval.value(am).data == std::vector<double>{0});
    const DecodeRow bad{1, 3};
    REQUIRE_THROWS_WITH(eval.step(std::span(&bad, 1)), Catch::Matchers::Contains("outside the vocabulary"));
}

TEST_CASE("the evaluator attends over its cache with sinks, a soft cap and a window", "[models][eval]") {
    ScratchDir d("eval-attend");
    const auto c = fixture(d);
    BuiltGraph b;
    Graph& g = b.graph;
    const Val x = g.val(Rows::Tokens, 2, "x"), capped = g.val(Rows::Tokens, 2, "capped"),
              windowed = g.val(Rows::Tokens, 2, "windowed");
    const StateId k = g.state(KeyCache{1, 2}), v = g.state(ValueCache{1, 2});
    g.push(Embed{{c.require("embed"), Whole{false}}, x});
    g.push(CacheAppend{x, k});
    g.push(CacheAppend{x, v});
    g.push(AttendCache{x, k, v, 1, 1, 2, 1.0, std::nullopt, Weight{c.require("sinks"), Whole{false}}, 2.0,
                       capped});
    g.push(AttendCache{x, k, v, 1, 1, 2, 0.5, 1, std::nullopt, std::nullopt, windowed});
    REQUIRE_FALSE(check(g));
    GraphEvaluator eval(b, c);
    const DecodeRow r0{4, 0}, r1{4, 1};
    eval.step(std::span(&r0, 1));
    eval.step(std::span(&r1, 1));
    CHECK(eval.length(4) == 2);
    // Query x1 = [0.5, 3] over keys x0 = [1, −2], x1: scores 2·tanh(q·k / 2), and the sink 0.5
    // takes part in the softmax only.
    const double s0 = 2 * std::tanh((0.5 * 1 + 3 * -2) / 2.0), s1 = 2 * std::tanh((0.25 + 9) / 2.0),
                 sink = 0.5;
    const double z = std::exp(s0) + std::exp(s1) + std::exp(sink);
    const double p0 = std::exp(s0) / z, p1 = std::exp(s1) / z;
    CHECK(eval.value(capped).at(0, 0) == Approx(p0 * 1 + p1 * 0.5).epsilon(1e-12));
    CHECK(eval.value(capped).at(0, 1) == Approx(p0 * -2 + p1 * 3).epsilon(1e-12));
    // A window of one position: only the token itself.
    CHECK(eval.value(windowed).data == std::vector<double>{0.5, 3});
    // Another sequence starts from an empty cache; the first sees only itself.
    const DecodeRow other{9, 2};
    eval.step(std::span(&other, 1));
    CHECK(eval.length(9) == 1);
    const double t0 = 2 * std::tanh((4 + 0.0625) / 2.0);
    const double q0 = std::exp(t0) / (std::exp(t0) + std::exp(sink));
    CHECK(eval.value(capped).at(0, 0) == Approx(q0 * 2).epsilon(1e-12));
    eval.forget(9);
    CHECK(eval.length(9) == 0);
    const std::vector<DecodeRow> twice{{4, 0}, {4, 1}};
    REQUIRE_THROWS_WITH(eval.step(twice), Catch::Matchers::Contains("twice"));
}
