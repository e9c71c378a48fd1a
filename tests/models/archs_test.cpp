// The windowed (Mistral), soft-capped (Gemma-2) and MLA-like (DeepSeek-V3) architectures: their
// config fields recognised as transformers reads them, generated checkpoints built into graphs with
// the ops that carry those features, and the shim's exact refusals of them on the default card.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/shim/capabilities.hpp"
#include "engine/shim/check.hpp"
#include "models/json.hpp"
#include "models/model.hpp"
#include "models/recognise.hpp"
#include "models/reference.hpp"
#include "support.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

using namespace cardsim;
using namespace cardsim::models;
using namespace cardsim::models::test;
using namespace cardsim::graph;
using Catch::Matchers::Contains;

namespace {

/// The ops of kind `K` of a graph, in order.
template <class K>
std::vector<const K*> all(const Graph& g) {
    std::vector<const K*> out;
    for (auto& op : g.ops)
        if (auto* k = std::get_if<K>(&op)) out.push_back(k);
    return out;
}

/// Each refusal's text, in the report's order.
std::vector<std::string> refusals(const shim::Report& r) {
    std::vector<std::string> out;
    for (auto& f : r.refusals)
        out.push_back(f.text());
    return out;
}

/// The last line of the report's listing: the verdict.
std::string verdict(const shim::Report& r, const Graph& g) {
    std::string t = r.text(g);
    t.pop_back();
    return t.substr(t.rfind('\n') + 1);
}

shim::Capabilities default_card() {
    return shim::capabilities(card::default_card_config());
}

/// The decoder spec of config `c` after `edit`.
DecoderSpec parse_edited(boost::json::object c, const std::function<void(boost::json::object&)>& edit) {
    edit(c);
    return std::get<DecoderSpec>(parse_config(c, "cfg.json"));
}

const std::string WINDOW = "the engine's attention takes no window";
const std::string SOFT_CAP = "the engine's attention takes no soft cap";
const std::string VARIANTS = "the engine's attention takes no mask, window, sink or soft cap";

} // namespace

TEST_CASE("a generated mistral checkpoint has a window on every layer and is refused for it",
          "[models][archs]") {
    ScratchDir d("archs-mistral");
    tiny(SynthArch::Windowed, d / "m");
    const Model m = load_model(d / "m");
    const auto& spec = std::get<DecoderSpec>(m.spec);
    CHECK(spec.family == DecoderFamily::Mistral);
    CHECK(describe(m.spec) == "dense decoder (mistral) with sliding windows");
    CHECK(layer_kinds(m.spec) == std::vector<std::string>{"attention(window 4)", "attention(window 4)"});
    const auto b = build_graph(m);
    const auto attend = all<AttendCache>(b.graph);
    REQUIRE(attend.size() == 2);
    for (auto* a : attend) {
        CHECK(a->window == std::optional<std::size_t>{4});
        CHECK_FALSE(a->softcap);
        CHECK(a->scale == 1.0 / std::sqrt(8.0));
    }
    const auto r = shim::check_model(b.graph, default_card());
    CHECK(refusals(r) == std::vector<std::string>{
                             "layer 0, attention: " + WINDOW,
                             "layer 0, attention: the engine has no unit for a sliding window",
                             "layer 1, attention: " + WINDOW,
                             "layer 1, attention: the engine has no unit for a sliding window",
                         });
    CHECK(verdict(r, b.graph) == "verdict: the card refuses this model (4 refusals)");

    // An attention unit with windows runs it: the attention uses a window and no other variant
    // (sinks, soft caps), so it needs no more of the class.
    auto caps = default_card();
    caps.attention_sinks = caps.attention_softcap = true;
    CHECK(refusals(shim::check_model(b.graph, caps)) ==
          std::vector<std::string>{
              "layer 0, attention: " + WINDOW,
              "layer 0, attention: the engine has no unit for a sliding window",
              "layer 1, attention: " + WINDOW,
              "layer 1, attention: the engine has no unit for a sliding window",
          });
    caps = default_card();
    caps.attention_window = true;
    CHECK(shim::check_model(b.graph, caps).runs());
}

TEST_CASE("mistral's window and kv heads follow transformers' defaults for absent and null fields",
          "[models][archs]") {
    const auto base = synth_config(SynthArch::Windowed, SynthSize::Tiny);
    auto absent = parse_edited(base, [](auto& c) {
        c.erase("sliding_window");
        c.erase("num_key_value_heads");
        c["num_attention_heads"] = 8;
        c["layer_types"] = boost::json::array{"full_attention"}; // MistralConfig ignores it
    });
    CHECK(absent.layers[0].window == std::optional<std::size_t>{4096});
    CHECK(absent.attention.kv_heads == 8);
    auto null = parse_edited(base, [](auto& c) {
        c["sliding_window"] = nullptr;
        c["num_key_value_heads"] = nullptr;
        c["attention_bias"] = true; // MistralAttention has no biases whatever the config says
    });
    CHECK_FALSE(null.layers[0].window);
    CHECK_FALSE(null.layers[1].window);
    CHECK(null.attention.kv_heads == 4);
    CHECK_FALSE(null.attention.qkv_bias);
    CHECK_FALSE(null.attention.o_bias);
}

TEST_CASE("a generated gemma2 checkpoint carries its soft caps, scale, windows and GeGLU into the graph",
          "[models][archs]") {
    ScratchDir d("archs-gemma2");
    tiny(SynthArch::Softcap, d / "m");
    const Model m = load_model(d / "m");
    const auto& spec = std::get<DecoderSpec>(m.spec);
    CHECK(spec.family == DecoderFamily::Gemma2);
    CHECK(spec.tied);
    CHECK(spec.zero_centred);
    CHECK(describe(m.spec) == "dense decoder (gemma2) with soft caps, sliding windows");
    CHECK(layer_kinds(m.spec) == std::vector<std::string>{"attention(window 4)", "attention"});
    const auto b = build_graph(m);
    const Graph& g = b.graph;

    // The embedding scaled by √hidden, in place.
    const auto scales = all<Scale>(g);
    REQUIRE(scales.size() == 1);
    CHECK(scales[0]->factor == std::sqrt(32.0));
    CHECK(g.names[scales[0]->x.id] == "hidden");
    // Scores scaled by query_pre_attn_scalar^-½ and soft-capped at 50; layer 0 (sliding) windowed.
    const auto attend = all<AttendCache>(g);
    REQUIRE(attend.size() == 2);
    CHECK(attend[0]->window == std::optional<std::size_t>{4});
    CHECK_FALSE(attend[1]->window);
    for (auto* a : attend) {
        CHECK(a->softcap == std::optional<double>{50.0});
        CHECK(a->scale == 1.0 / std::sqrt(8.0));
    }
    // gelu_pytorch_tanh(gate) · up.
    const auto glu = all<GeluMul>(g);
    REQUIRE(glu.size() == 2);
    CHECK(glu[0]->tanh);
    CHECK(all<SiluMul>(g).empty());
    // Four zero-centred norms a layer plus the final one, each reading its own tensor.
    const auto norms = all<RmsNorm>(g);
    CHECK(norms.size() == 2 * 4 + 1);
    std::set<W> read;
    for (auto* n : norms) {
        CHECK(n->zero_centred);
        read.insert(n->w->tensor);
    }
    CHECK(read.size() == norms.size());
    for (std::string t : {"input", "post_attention", "pre_feedforward", "post_feedforward"})
        CHECK(read.count(m.checkpoint.require("model.layers.1." + t + "_layernorm.weight")) == 1);
    // The logits soft-capped at 30 before the arg-max.
    const auto caps = all<Softcap>(g);
    REQUIRE(caps.size() == 1);
    CHECK(caps[0]->cap == 30.0);
    CHECK(g.logits == caps[0]->out);
    CHECK(all<ArgMax>(g)[0]->x == caps[0]->out);

    const auto r = shim::check_model(g, default_card());
    CHECK(refusals(r) == std::vector<std::string>{
                             "embedding: the engine reads its embedding unscaled",
                             "embedding: the engine has no unit for an embedding scale",
                             "layer 0, attention: the engine's attention takes no window or soft cap",
                             "layer 0, attention: the engine has no unit for a sliding window",
                             "layer 0, ffn: the engine has no unit for GELU",
                             "layer 1, attention: " + SOFT_CAP,
                             "layer 1, attention: the engine has no unit for soft-capped scores",
                             "layer 1, ffn: the engine has no unit for GELU",
                             "head: " + VARIANTS,
                             "head: the engine has no unit for a logit soft cap",
                         });
    CHECK(verdict(r, g) == "verdict: the card refuses this model (10 refusals)");

    // A card with every attention feature, an embedding scale and a GELU unit still lacks the tanh
    // GELU of a separate gate and the logit soft cap (no config key gives one).
    auto most = default_card();
    most.attention_window = most.attention_sinks = most.attention_softcap = most.embedding_scale = true;
    most.set(program::Unit::Gelu);
    CHECK(refusals(shim::check_model(g, most)) ==
          std::vector<std::string>{"layer 0, ffn: the engine has no unit for GELU's tanh approximation",
                                   "layer 1, ffn: the engine has no unit for GELU's tanh approximation",
                                   "head: the engine has no unit for a logit soft cap"});
}

TEST_CASE("gemma2's fields: defaults, nulls for no soft cap, the activation and layer types",
          "[models][archs]") {
    const auto base = synth_config(SynthArch::Softcap, SynthSize::Tiny);
    auto defaults = parse_edited(base, [](auto& c) {
        for (auto k : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
                       "layer_types", "sliding_window", "tie_word_embeddings", "hidden_activation"})
            c.erase(k);
        c["num_hidden_layers"] = 3;
    });
    CHECK(defaults.attention.softcap == std::optional<double>{50.0});
    CHECK(defaults.final_softcap == std::optional<double>{30.0});
    CHECK(defaults.attention.scale == 1.0 / 16.0); // query_pre_attn_scalar 256
    CHECK(defaults.tied);
    CHECK(defaults.activation == Activation::GeluTanh);
    CHECK(defaults.layers[0].window == std::optional<std::size_t>{4096});
    CHECK_FALSE(defaults.layers[1].window);
    CHECK(defaults.layers[2].window == std::optional<std::size_t>{4096});
    auto none = parse_edited(base, [](auto& c) {
        c["attn_logit_softcapping"] = nullptr;
        c["final_logit_softcapping"] = nullptr;
        c["hidden_activation"] = "gelu";
    });
    CHECK_FALSE(none.attention.softcap);
    CHECK_FALSE(none.final_softcap);
    CHECK(none.activation == Activation::Gelu);
    CHECK_THROWS_WITH(parse_edited(base, [](auto& c) { c["hidden_activation"] = "relu"; }),
                      Contains("cfg.json: field `hidden_activation` (a gemma2 model): is `relu`"));
    CHECK_THROWS_WITH(parse_edited(base,
                                   [](auto& c) {
                                       c["layer_types"] = boost::json::array{"a", "b"};
                                   }),
                      Contains("field `layer_types` (a gemma2 model): has `a` for layer 0"));
    CHECK_THROWS_WITH(parse_edited(base, [](auto& c) { c["use_bidirectional_attention"] = true; }),
                      Contains("field `use_bidirectional_attention` (a gemma2 model): is true"));
}

TEST_CASE("a generated deepseek_v3 checkpoint builds latent attention and is refused for it",
          "[models][archs]") {
    ScratchDir d("archs-deepseek");
    tiny(SynthArch::Mla, d / "m");
    const Model m = load_model(d / "m");
    const auto& spec = std::get<DecoderSpec>(m.spec);
    CHECK(spec.family == DecoderFamily::DeepseekV3);
    REQUIRE(spec.latent);
    CHECK(spec.latent->q_rank == 16);
    CHECK(spec.latent->kv_rank == 16);
    CHECK(spec.latent->qk_dim() == 12);
    CHECK(spec.attention.interleaved);
    CHECK(describe(m.spec) == "dense decoder (deepseek_v3) with multi-head latent attention");
    CHECK(layer_kinds(m.spec) == std::vector<std::string>{"latent-attention", "latent-attention"});
    const auto b = build_graph(m);
    const Graph& g = b.graph;
    // Per layer: the query absorbed into the latent space, latent attention, the value up-projection.
    const auto hm = all<HeadMatmul>(g);
    REQUIRE(hm.size() == 4);
    const W kvb = m.checkpoint.require("model.layers.0.self_attn.kv_b_proj.weight");
    CHECK(hm[0]->w == Weight{kvb, HeadPart{16, 0, 8, false}});
    CHECK(hm[1]->w == Weight{kvb, HeadPart{16, 8, 8, true}});
    const auto lat = all<LatentAttendCache>(g);
    REQUIRE(lat.size() == 2);
    CHECK(lat[0]->heads == 4);
    CHECK(lat[0]->latent_dim == 16);
    CHECK(lat[0]->rope_dim == 4);
    CHECK(lat[0]->scale == 1.0 / std::sqrt(12.0));
    CHECK(all<AttendCache>(g).empty());
    for (auto* r : all<Rotate>(g))
        CHECK(r->interleaved);

    const auto r = shim::check_model(g, default_card());
    CHECK(refusals(r) == std::vector<std::string>{
                             "layer 0, attention: the engine has no unit for an interleaved rotary embedding",
                             "layer 0, attention: the engine has no unit for multi-head latent attention",
                             "layer 1, attention: the engine has no unit for an interleaved rotary embedding",
                             "layer 1, attention: the engine has no unit for multi-head latent attention",
                         });
    CHECK(verdict(r, g) == "verdict: the card refuses this model (4 refusals)");
    auto mla = default_card();
    mla.mla = true;
    CHECK(refusals(shim::check_model(g, mla)) ==
          std::vector<std::string>{
              "layer 0, attention: the engine has no unit for an interleaved rotary embedding",
              "layer 1, attention: the engine has no unit for an interleaved rotary embedding"});
}

TEST_CASE("deepseek's fields: a plain q_proj, V2's interleaving, and what cardsim refuses to build",
          "[models][archs]") {
    const auto base = synth_config(SynthArch::Mla, SynthSize::Tiny);
    auto lite = parse_edited(base, [](auto& c) {
        c["model_type"] = "deepseek_v2";
        c["q_lora_rank"] = nullptr;   // DeepSeek-V2-Lite: one q_proj
        c["rope_interleave"] = false; // not a V2 field: V2 always rotates complex pairs
    });
    CHECK(lite.family == DecoderFamily::DeepseekV2);
    CHECK(lite.latent->q_rank == 0);
    CHECK(lite.attention.interleaved);
    const auto tensors = expected_tensors(lite);
    CHECK(std::any_of(tensors.begin(), tensors.end(),
                      [](auto& t) { return t.name == "model.layers.0.self_attn.q_proj.weight"; }));
    auto neox = parse_edited(base, [](auto& c) { c["rope_interleave"] = false; });
    CHECK_FALSE(neox.attention.interleaved);
    CHECK_THROWS_WITH(
        parse_edited(base, [](auto& c) { c["first_k_dense_replace"] = 1; }),
        Contains("cfg.json: field `first_k_dense_replace` (a deepseek_v3 model): is 1, so layers "
                 "1..1 route to experts"));
    CHECK_THROWS_WITH(parse_edited(base,
                                   [](auto& c) {
                                       c.erase("first_k_dense_replace"); // V3's default: 3
                                       c["num_hidden_layers"] = 5;
                                   }),
                      Contains("field `first_k_dense_replace` (a deepseek_v3 model): is 3, so layers 3..4"));
    CHECK_THROWS_WITH(parse_edited(base, [](auto& c) { c["attention_bias"] = true; }),
                      Contains("field `attention_bias` (a deepseek_v3 model): is true"));
    CHECK_THROWS_WITH(parse_edited(base,
                                   [](auto& c) {
                                       c["rope_scaling"] = boost::json::object{{"type", "yarn"}};
                                   }),
                      Contains("only the default RoPE"));
}

TEST_CASE("the f64 reference says which model types it does not evaluate rather than guess",
          "[models][archs]") {
    ScratchDir d("archs-reference");
    tiny(SynthArch::Dense, d / "m");
    auto config = parse_json(read_file(d / "m" / "config.json"), "config.json").as_object();
    config["model_type"] = "olmo";
    write_file(d / "m" / "config.json", boost::json::serialize(config));
    const auto c = Checkpoint::open(d / "m");
    CHECK_THROWS_WITH(DecoderReference(c),
                      Contains("the f64 decoder reference does not evaluate model_type `olmo`"));
}

TEST_CASE("make-model writes the new architectures in tiny, small and 0.1b only", "[models][archs]") {
    for (auto a : {SynthArch::Windowed, SynthArch::Softcap, SynthArch::Mla}) {
        INFO(name(a));
        CHECK(parse_synth_arch(name(a)) == a);
        for (auto s : {SynthSize::Tiny, SynthSize::Small, SynthSize::B01})
            CHECK_NOTHROW(parse_config(synth_config(a, s), "c.json"));
        CHECK_THROWS_WITH(synth_config(a, SynthSize::B08), Contains("tiny, small or 0.1b, not 0.8b"));
    }
}

TEST_CASE("a generated gpt-oss checkpoint carries its sinks, windows, YaRN and biased, interleaved experts "
          "into the graph, and the shim names each of them",
          "[models][archs]") {
    ScratchDir d("archs-gpt-oss");
    tiny(SynthArch::GptOss, d / "m");
    const Model m = load_model(d / "m");
    const auto& spec = std::get<DecoderSpec>(m.spec);
    CHECK(spec.family == DecoderFamily::GptOss);
    CHECK(describe(m.spec) == "dense decoder with experts (gpt_oss) with sliding windows");
    CHECK(layer_kinds(m.spec) == std::vector<std::string>{"attention(window 4)+moe", "attention+moe"});
    CHECK(spec.attention.sinks);
    CHECK(spec.attention.qkv_bias);
    CHECK(spec.attention.o_bias);
    REQUIRE(spec.attention.yarn);
    CHECK(spec.attention.yarn->factor == 32);
    CHECK_FALSE(spec.attention.yarn->truncate);
    CHECK(spec.attention.yarn->attention_factor == 0.1 * std::log(32.0) + 1.0);
    REQUIRE(spec.moe);
    CHECK(spec.moe->transposed);
    CHECK(spec.moe->swiglu_limit == std::optional<double>{7.0});
    const auto b = build_graph(m);
    const Graph& g = b.graph;
    for (auto* r : all<Rotate>(g))
        CHECK(r->yarn);
    const auto attend = all<AttendCache>(g);
    REQUIRE(attend.size() == 2);
    CHECK(attend[0]->window == std::optional<std::size_t>{4});
    CHECK_FALSE(attend[1]->window);
    CHECK(attend[0]->sinks);
    const auto moe = all<Moe>(g);
    REQUIRE(moe.size() == 2);
    CHECK(moe[0]->router_bias);
    CHECK(moe[0]->gate.size() == 4);
    CHECK(moe[0]->down_bias.size() == 4);
    CHECK(moe[0]->swiglu_alpha == 1.702);
    // Expert 2's gate is the even columns of its rows of gate_up_proj [E, H, 2I], its up the odd ones,
    // both multiplied as x · W (not transposed): what the strided column view reads.
    const std::size_t H = spec.hidden, I = spec.moe->intermediate;
    const auto all_values = m.checkpoint.values(moe[0]->gate[2].tensor, Whole{false});
    const auto gate = m.checkpoint.values(moe[0]->gate[2].tensor, moe[0]->gate[2].view);
    const auto up = m.checkpoint.values(moe[0]->up[2].tensor, moe[0]->up[2].view);
    REQUIRE(gate.size() == H * I);
    for (std::size_t r = 0; r < H; ++r)
        for (std::size_t c = 0; c < I; ++c) {
            CHECK(gate[r * I + c] == all_values[(2 * H + r) * 2 * I + 2 * c]);
            CHECK(up[r * I + c] == all_values[(2 * H + r) * 2 * I + 2 * c + 1]);
        }
    // On the default card: what it lacks, named; with sinks, windows, soft caps, biases and experts
    // enabled, what no config adds yet.
    CHECK(refusals(shim::check_model(g, default_card())) ==
          std::vector<std::string>{
              "layer 0, attention: the engine's matvec unit adds no bias and scales by no factor",
              "layer 0, attention: the engine has no unit for YaRN rotary scaling (`units.rotation.yarn`)",
              "layer 0, attention: the engine's attention takes no window or sink",
              "layer 0, attention: the engine has no unit for a sliding window",
              "layer 0, ffn: the engine has no unit for experts",
              "layer 1, attention: the engine's matvec unit adds no bias and scales by no factor",
              "layer 1, attention: the engine has no unit for YaRN rotary scaling (`units.rotation.yarn`)",
              "layer 1, attention: the engine's attention takes no sink",
              "layer 1, attention: the engine has no unit for attention sinks",
              "layer 1, ffn: the engine has no unit for experts",
          });
    auto config = card::default_card_config();
    config.capabilities.experts = true;
    config.units[card::UnitKind::Router].count = 1; // as reading `capabilities.experts = true` gives it
    config.units.attention.window = config.units.attention.sinks = config.units.attention.softcap = true;
    config.units.matvec.bias = true;
    CHECK(refusals(shim::check_model(g, shim::capabilities(config))) ==
          std::vector<std::string>{
              "layer 0, attention: the engine has no unit for YaRN rotary scaling (`units.rotation.yarn`)",
              "layer 0, ffn: the engine has no unit for a clamped SwiGLU (`units.silu_mul.clamp`)",
              "layer 1, attention: the engine has no unit for YaRN rotary scaling (`units.rotation.yarn`)",
              "layer 1, ffn: the engine has no unit for a clamped SwiGLU (`units.silu_mul.clamp`)",
          });
    // Without the matvec's bias, the router's and experts' biases are named too.
    config.units.matvec.bias = false;
    const auto without_bias = refusals(shim::check_model(g, shim::capabilities(config)));
    CHECK(std::count(
              without_bias.begin(), without_bias.end(),
              "layer 0, ffn: the engine has no unit for a router bias (`units.matvec.bias`), expert biases "
              "(`units.matvec.bias`) or a clamped SwiGLU (`units.silu_mul.clamp`)") == 1);
    // With YaRN and the clamped SwiGLU as well, the card runs it.
    config.units.matvec.bias = config.units.rotation.yarn = config.units.silu_mul.clamp = true;
    CHECK(refusals(shim::check_model(g, shim::capabilities(config))).empty());
}

TEST_CASE("gpt_oss's config: defaults as GptOssConfig's, YaRN only for it, and a bad YaRN refused by name",
          "[models][archs]") {
    auto c = synth_config(SynthArch::GptOss, SynthSize::Small);
    auto spec = parse_edited(c, [](auto& o) {
        o.erase("layer_types");
        o.erase("swiglu_limit");
        o.erase("attention_bias");
    });
    CHECK(spec.layers[0].window);
    CHECK_FALSE(spec.layers[1].window);
    CHECK(spec.moe->swiglu_limit == std::optional<double>{7.0});
    CHECK(spec.attention.qkv_bias); // GptOssConfig's attention_bias defaults to true
    CHECK_THROWS_WITH(
        parse_edited(c, [](auto& o) { o["rope_scaling"].as_object()["factor"] = 0.5; }),
        Contains("`rope_scaling.factor` (a gpt_oss model): must be a number of at least 1 for YaRN"));
    auto q = synth_config(SynthArch::Dense, SynthSize::Small);
    CHECK_THROWS_WITH(
        parse_edited(q,
                     [](auto& o) {
                         o["rope_scaling"] = boost::json::object{{"rope_type", "yarn"}, {"factor", 4.0}};
                     }),
        Contains("is `yarn`; only the default RoPE (one theta) is built"));
}
