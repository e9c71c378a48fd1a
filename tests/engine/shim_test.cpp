// The shim: the support table against the seed's, one_matrix, per-op fits, the fusion pass and the
// whole-model check on built-in graphs.

#include "engine/graph/examples.hpp"
#include "engine/shim/check.hpp"
#include "tests/engine/default_card.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace cardsim;
using namespace cardsim::shim;
using namespace cardsim::graph;
using program::Unit;

namespace {

/// The seed's support table (shim.rs `supports`), transcribed: class name → answer.
const std::vector<std::pair<std::string, std::string>> seed_table = {
#include "tests/engine/seed_support_table.inc"
};

bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("the default card reproduces the seed's support table and sentences for every class") {
    auto caps = test::default_card();
    REQUIRE(seed_table.size() == class_count);
    for (auto& [name, expected] : seed_table) {
        auto cls = class_named(name);
        INFO(name);
        REQUIRE(cls.has_value());
        REQUIRE(to_string(supports(*cls, caps)) == expected);
    }
}

TEST_CASE("a card with the features answers natively where the default refuses") {
    auto caps = test::default_card();
    caps.matvec_bias = true;
    REQUIRE(to_string(supports(ClassId::GemmBias, caps)) == "Native");
    REQUIRE(to_string(supports(ClassId::AffineInputFold, caps)) ==
            "Refuse: the engine's matvec unit scales by no factor");
    caps.attention_window = true;
    REQUIRE(to_string(supports(ClassId::Softcap, caps)) ==
            "Refuse: the engine's attention takes no mask, sink or soft cap");
    caps.attention_softcap = true;
    REQUIRE(to_string(supports(ClassId::Softcap, caps)) == "Native");
    caps.experts = true;
    REQUIRE(to_string(supports(ClassId::RouterTopk, caps)) == "Native");
    caps.cards = 2;
    // Several cards: a tensor-parallel all-reduce runs as sends and receives, the norm after it alone.
    REQUIRE(to_string(supports(ClassId::AllreduceNorm, caps)) == "Decompose");
    caps.set(Unit::Conv, false);
    REQUIRE(to_string(supports(ClassId::ConvBiasSilu, caps)) == "Refuse: the engine has no conv unit");
}

TEST_CASE("experts fit a card with experts and a router unit, and a shared expert only under its gate") {
    auto caps = test::default_card();
    Moe moe;
    moe.router = Weight{0};
    moe.gate = moe.up = moe.down = {Weight{1}, Weight{2}};
    moe.top_k = 1;
    moe.intermediate = 8;
    auto why = [&](const Moe& m) { return fits(Op{m}, caps).value_or("fits"); };
    REQUIRE(why(moe) == "the engine has no unit for experts");
    caps.experts = true;
    REQUIRE_THAT(why(moe), Catch::Contains("has no router unit"));
    caps.set(Unit::Router);
    REQUIRE(why(moe) == "fits");
    moe.shared_gate = moe.shared_up = moe.shared_down = Weight{3};
    moe.shared_intermediate = 8;
    REQUIRE_THAT(why(moe), Catch::Contains("only under its sigmoid gate"));
    moe.shared_expert_gate = Weight{4};
    REQUIRE(why(moe) == "fits");
}

TEST_CASE("one_matrix takes row ranges from the first row on or each head's two halves, nothing else") {
    auto rr = [](std::size_t t, std::size_t first, std::size_t count) {
        return Weight{t, RowRange{first, count, true}};
    };
    auto hp = [](std::size_t t, std::size_t off) { return Weight{t, HeadPart{128, off, 64, true}}; };
    std::vector<Weight> qkv{rr(7, 0, 256), rr(7, 256, 256), rr(7, 512, 1024)};
    REQUIRE(one_matrix(qkv));
    REQUIRE(one_matrix(std::vector<Weight>{rr(7, 0, 256)}));
    REQUIRE_FALSE(one_matrix(std::vector<Weight>{rr(7, 0, 256), rr(7, 300, 10)}));  // a gap
    REQUIRE_FALSE(one_matrix(std::vector<Weight>{rr(7, 256, 256)}));                // not from the first row
    REQUIRE_FALSE(one_matrix(std::vector<Weight>{rr(7, 0, 256), rr(8, 256, 256)})); // two tensors
    REQUIRE_FALSE(one_matrix(std::vector<Weight>{Weight{7, RowRange{0, 256, false}}}));
    REQUIRE(one_matrix(std::vector<Weight>{hp(3, 0), hp(3, 64)}));
    REQUIRE(one_matrix(std::vector<Weight>{hp(3, 0)}));
    REQUIRE_FALSE(one_matrix(std::vector<Weight>{hp(3, 64)}));
    REQUIRE_FALSE(one_matrix(std::vector<Weight>{hp(3, 0), hp(3, 64), hp(3, 64)}));
    REQUIRE_FALSE(one_matrix(
        std::vector<Weight>{Weight{3, HeadPart{192, 0, 64, true}}, Weight{3, HeadPart{192, 64, 64, true}}}));
}

TEST_CASE("each op the default card has no unit for is refused with the seed's sentence") {
    auto caps = test::default_card();
    Val x{0}, y{1};
    auto why = [&](Op op) { return fits(op, caps).value_or("fits"); };
    Moe moe;
    moe.x = x;
    moe.router = Weight{0};
    moe.top_k = 2;
    moe.out = y;
    REQUIRE(why(moe) == "the engine has no unit for experts");
    REQUIRE(why(Gelu{x, y}) == "the engine has no unit for GELU");
    REQUIRE(why(GeGlu{x, y}) == "the engine has no unit for GELU");
    REQUIRE(why(Gemm{x, Weight{0}, std::nullopt, Epilogue::Gelu, y}) == "the engine has no unit for GELU");
    AttendCache a{x, {0}, {1}, 4, 2, 64, 0.125, std::nullopt, std::nullopt, std::nullopt, y};
    REQUIRE(why(a) == "fits");
    a.window = 128;
    REQUIRE(why(a) == "the engine has no unit for a sliding window");
    a.window.reset();
    a.sinks = Weight{5};
    REQUIRE(why(a) == "the engine has no unit for attention sinks");
    a.sinks.reset();
    a.softcap = 50.0;
    REQUIRE(why(a) == "the engine has no unit for soft-capped scores");
    REQUIRE(why(Softcap{x, 30.0, y}) == "the engine has no unit for a logit soft cap");
    REQUIRE(why(HeadMatmul{x, Weight{0}, 4, y}) == "the engine has no unit for multi-head latent attention");
    REQUIRE(why(Scale{x, 32.0, y}) == "the engine has no unit for an embedding scale");
    REQUIRE(why(Relu{x, y}) == "the engine has no unit for a ReLU");
    REQUIRE(why(Attention{x, 4, 64, std::nullopt, y}) == "the engine has no unit for a full attention");
    REQUIRE(why(Attention{x, 4, 64, 64, y}) == "the engine has no unit for a sliding window");
    REQUIRE(why(LayerNorm{x, Weight{0}, std::nullopt, 1e-5, y}) == "the engine has no unit for a LayerNorm");
    REQUIRE(why(Gemm{x, Weight{0}, std::nullopt, Epilogue::None, y}) == "fits");
    REQUIRE(why(DeltaStep{}) == "fits");
}

TEST_CASE("the fusion pass merges a hybrid block's projections, conv and gates and declines the rest") {
    // A Gated-DeltaNet block shaped as the model builders emit it.
    Graph g;
    auto T = Rows::Tokens;
    Site mixer{0, Part::Mixer};
    auto h = g.val(T, 64, "h");
    g.push(Embed{Weight{0}, h}, {std::nullopt, Part::Embedding});
    auto x = g.val(T, 64, "x");
    g.push(RmsNorm{h, Weight{1}, 1e-6, true, 64, x}, mixer);
    auto q = g.val(T, 32), k = g.val(T, 32), v = g.val(T, 64), z = g.val(T, 64);
    g.push(Gemm{x, Weight{2, RowRange{0, 32, true}}, std::nullopt, Epilogue::None, q}, mixer);
    g.push(Gemm{x, Weight{2, RowRange{32, 32, true}}, std::nullopt, Epilogue::None, k}, mixer);
    g.push(Gemm{x, Weight{2, RowRange{64, 64, true}}, std::nullopt, Epilogue::None, v}, mixer);
    g.push(Gemm{x, Weight{3}, std::nullopt, Epilogue::None, z}, mixer);
    auto wq = g.state(ConvWindow{32, 4});
    auto cq = g.val(T, 32);
    g.push(Conv{q, Weight{4, RowRange{0, 32, true}}, wq, cq}, mixer);
    g.push(Silu{cq, cq}, mixer);
    auto b = g.val(T, 2), a = g.val(T, 2), beta = g.val(T, 2), gg = g.val(T, 2);
    g.push(Gemm{x, Weight{5}, std::nullopt, Epilogue::None, b}, mixer);
    g.push(Gemm{x, Weight{6}, std::nullopt, Epilogue::None, a}, mixer);
    g.push(GdnGates{b, a, Weight{7}, Weight{8}, beta, gg}, mixer);
    // Two projections of another tensor that are not one matrix: declined, with the sentence.
    auto p1 = g.val(T, 8), p2 = g.val(T, 8);
    g.push(Gemm{x, Weight{9, RowRange{0, 8, true}}, std::nullopt, Epilogue::None, p1}, mixer);
    g.push(Gemm{x, Weight{9, RowRange{16, 8, true}}, std::nullopt, Epilogue::None, p2}, mixer);
    REQUIRE_FALSE(check(g).has_value());
    auto caps = test::default_card();
    auto f = fuse(g, caps);
    std::map<std::string, std::vector<std::size_t>> by_class;
    for (auto& grp : f.groups)
        if (grp.cls) by_class[std::string(name(*grp.cls))] = grp.ops;
    REQUIRE(by_class["merged_qkv"] == std::vector<std::size_t>{2, 3, 4});
    REQUIRE(by_class["conv_bias_silu"] == std::vector<std::size_t>{6, 7});
    REQUIRE(by_class["gdn_gating"] == std::vector<std::size_t>{10});
    REQUIRE(by_class["norm_weight_offset"] == std::vector<std::size_t>{1});
    REQUIRE(f.declined.size() == 1);
    REQUIRE(f.declined[0].reason == not_one_matrix);
    std::size_t grouped = 0;
    for (auto& grp : f.groups)
        grouped += grp.ops.size();
    REQUIRE(grouped == g.ops.size());
    auto report = check_model(g, caps);
    REQUIRE(report.runs());
    REQUIRE(contains(report.text(g), "native     merged_qkv               3 Gemm -> Matvec"));
}

TEST_CASE("a dense decoder runs on the default card, each part listed with its commands") {
    auto g = example_decoder(DecoderShape{2, 256, 4, 2, 64, 512, 1000});
    auto r = check_model(g, test::default_card());
    INFO(r.text(g));
    REQUIRE(r.runs());
    auto text = r.text(g);
    REQUIRE(contains(text, "layer 1, attention"));
    REQUIRE(contains(
        text,
        "decompose  qk_norm_rope_kv_append   RmsNorm, Rotate, CacheAppend -> RmsNorm, Rotate, CacheAppend"));
    REQUIRE(contains(text, "decompose  gemv_gate_up_glu         2 Gemm, SiluMul -> Matvec, Matvec, SiluMul"));
    REQUIRE(contains(
        text,
        "not merged glu_act_mul              the engine gates an attention's result by a sigmoid only"));
    REQUIRE(contains(text, "verdict: the card runs this model"));
}

TEST_CASE("an encoder is refused on the default card and accepted on a card with its units") {
    auto g = example_encoder(EncoderShape{3, 128, 2, 192, 500, 3, 128});
    auto caps = test::default_card();
    auto r = check_model(g, caps);
    REQUIRE_FALSE(r.runs());
    std::vector<std::string> texts;
    for (auto& f : r.refusals)
        texts.push_back(f.text());
    auto has = [&](std::string_view s) { return std::find(texts.begin(), texts.end(), s) != texts.end(); };
    REQUIRE(has("layer 0, attention: the engine has no unit for a full attention"));
    REQUIRE(has("layer 1, attention: the engine has no unit for a sliding window"));
    REQUIRE(has("layer 0, ffn: the engine has no unit for GELU"));
    REQUIRE(has("embedding: the engine has no unit for a LayerNorm"));
    REQUIRE(has("head: the engine has no unit for an act head"));
    REQUIRE(contains(r.text(g), "verdict: the card refuses this model"));
    for (auto u : {Unit::Gelu, Unit::Geglu, Unit::LayerNorm, Unit::Rope, Unit::AttentionWindow, Unit::AddType,
                   Unit::GatherMarkers, Unit::ActFeatures})
        caps.set(u);
    auto ok = check_model(g, caps);
    INFO(ok.text(g));
    REQUIRE(ok.runs());
}
