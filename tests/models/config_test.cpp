// config.json recognition: the fields each recogniser needs, Qwen3.5's nesting, and a clear error
// naming the file and field for every missing or contradictory field.

#include "engine/error.hpp"
#include "models/build.hpp"
#include "models/json.hpp"
#include "models/model.hpp"
#include "models/recognise.hpp"
#include "models/synthetic.hpp"
#include "models/tensors.hpp"
#include "support.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

using namespace cardsim;
using namespace cardsim::models;
using namespace cardsim::models::test;
using Catch::Matchers::Contains;

namespace {

namespace json = boost::json;

/// Parses `text` as a config named "cfg.json".
ModelSpec parse(const std::string& text) {
    return parse_config(parse_json(text, "cfg.json").as_object(), "cfg.json");
}

/// A Qwen3.5-0.8B config.json as the hub writes it (text fields under text_config).
const std::string QWEN35 = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "tie_word_embeddings": true,
  "text_config": {
    "model_type": "qwen3_5_text", "attn_output_gate": true, "full_attention_interval": 4, "head_dim": 256,
    "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3584,
    "layer_types": ["linear_attention","linear_attention","linear_attention","full_attention",
                    "linear_attention","linear_attention","linear_attention","full_attention",
                    "linear_attention","linear_attention","linear_attention","full_attention",
                    "linear_attention","linear_attention","linear_attention","full_attention",
                    "linear_attention","linear_attention","linear_attention","full_attention",
                    "linear_attention","linear_attention","linear_attention","full_attention"],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 16, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
    "num_attention_heads": 8, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10], "rope_type": "default",
                        "rope_theta": 10000000, "partial_rotary_factor": 0.25},
    "tie_word_embeddings": true, "vocab_size": 248320
  },
  "vision_config": {"depth": 12, "hidden_size": 768}
})";

/// `QWEN35` with `from` replaced by `to` (once).
std::string qwen35_with(const std::string& from, const std::string& to) {
    std::string s = QWEN35;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
}

const std::string QWEN3 = R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024,
  "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
  "head_dim": 128, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": true})";

std::string qwen3_with(const std::string& from, const std::string& to) {
    std::string s = QWEN3;
    const auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("the Qwen3.5-0.8B config is recognised with its nested text_config", "[models][config]") {
    const auto spec = parse(QWEN35);
    const auto& d = std::get<DecoderSpec>(spec);
    CHECK(d.family == DecoderFamily::Qwen3_5);
    CHECK(d.prefix == "model.language_model.");
    CHECK(d.hidden == 1024);
    CHECK(d.vocab == 248320);
    CHECK(d.tied);
    CHECK(d.zero_centred);
    CHECK(d.attention.heads == 8);
    CHECK(d.attention.kv_heads == 2);
    CHECK(d.attention.head_dim == 256);
    CHECK(d.attention.rotary_dim == 64);
    CHECK(d.attention.theta == 1e7);
    CHECK(d.attention.output_gate);
    CHECK(d.attention.qk_norm);
    REQUIRE(d.delta);
    CHECK(d.delta->conv_dim() == 6144);
    CHECK_FALSE(d.delta->grouped);
    REQUIRE(d.layers.size() == 24);
    for (std::size_t i = 0; i < 24; ++i)
        CHECK((d.layers[i].mixer == Mixer::Attention) == (i % 4 == 3));
    CHECK_FALSE(d.moe);
}

TEST_CASE("make-model's 0.8b hybrid has the Qwen3.5-0.8B text model's shape and size", "[models][config]") {
    const auto ours = parse_config(synth_config(SynthArch::Hybrid, SynthSize::B08), "synth");
    const auto real = parse(QWEN35);
    const auto a = expected_tensors(ours), b = expected_tensors(real);
    REQUIRE(a.size() == b.size());
    std::size_t params = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].name == b[i].name);
        CHECK(a[i].shape == b[i].shape);
        std::size_t n = 1;
        for (auto s : a[i].shape)
            n *= s;
        params += n;
    }
    // 254 M embedding + 18 Gated-DeltaNet and 6 gated-attention layers with their MLPs.
    CHECK(params > 700'000'000);
    CHECK(params < 800'000'000);
}

TEST_CASE("a missing required field is an error naming the file and the field", "[models][config]") {
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("hidden_size": 1024,)", "")),
                        Contains("cfg.json") && Contains("`hidden_size`") && Contains("missing"));
    REQUIRE_THROWS_WITH(parse(qwen35_with(R"("linear_key_head_dim": 128,)", "")),
                        Contains("`text_config.linear_key_head_dim`") && Contains("missing"));
    REQUIRE_THROWS_WITH(parse(R"({"vocab_size": 3})"), Contains("`model_type`") && Contains("missing"));
    REQUIRE_THROWS_WITH(parse(R"({"model_type": "qwen3_5", "vocab_size": 3})"), Contains("`text_config`"));
}

TEST_CASE("fields of the wrong type or value are errors naming the field", "[models][config]") {
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("num_hidden_layers": 28)", R"("num_hidden_layers": "28")")),
                        Contains("`num_hidden_layers`") && Contains("non-negative integer"));
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("num_hidden_layers": 28)", R"("num_hidden_layers": 0)")),
                        Contains("`num_hidden_layers`") && Contains("positive"));
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("rms_norm_eps": 1e-06)", R"("rms_norm_eps": -1)")),
                        Contains("`rms_norm_eps`"));
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("rms_norm_eps": 1e-06)", R"("hidden_act": "gelu")")),
                        Contains("`hidden_act`") && Contains("SiLU"));
    REQUIRE_THROWS_WITH(
        parse(qwen3_with(R"("rope_theta": 1000000)", R"("rope_scaling": {"rope_type": "yarn"})")),
        Contains("`rope_scaling.rope_type`") && Contains("yarn"));
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("model_type": "qwen3")", R"("model_type": "gpt2")")),
                        Contains("`model_type`") && Contains("gpt2") && Contains("qwen3_next"));
}

TEST_CASE("a hidden size not divisible by the heads is an error", "[models][config]") {
    REQUIRE_THROWS_WITH(parse(R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 1000,
        "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 12, "num_key_value_heads": 4})"),
                        Contains("cfg.json") && Contains("`hidden_size`") && Contains("not divisible"));
    REQUIRE_THROWS_WITH(parse(R"({"model_type": "modernbert", "vocab_size": 10, "hidden_size": 30,
        "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4, "num_question_types": 2})"),
                        Contains("`hidden_size`") && Contains("not divisible"));
}

TEST_CASE("contradictory fields are errors naming both", "[models][config]") {
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("num_key_value_heads": 8)", R"("num_key_value_heads": 6)")),
                        Contains("`num_key_value_heads`") && Contains("does not divide"));
    REQUIRE_THROWS_WITH(
        parse(qwen35_with(R"("full_attention_interval": 4)", R"("full_attention_interval": 3)")),
        Contains("`text_config.layer_types`") && Contains("full_attention_interval = 3") &&
            Contains("contradictory"));
    REQUIRE_THROWS_WITH(parse(qwen35_with(R"("num_hidden_layers": 24)", R"("num_hidden_layers": 20)")),
                        Contains("`text_config.layer_types`") && Contains("lists 24 layers"));
    REQUIRE_THROWS_WITH(
        parse(qwen35_with(R"("layer_types": ["linear_attention")", R"("layer_types": ["mamba")")),
        Contains("`mamba`"));
    REQUIRE_THROWS_WITH(
        parse(qwen35_with(R"("hidden_act": "silu",)", R"("hidden_act": "silu", "rope_theta": 5,)")),
        Contains("`text_config.rope_theta`") && Contains("contradictory"));
    REQUIRE_THROWS_WITH(parse(qwen35_with(R"("tie_word_embeddings": true, "vocab_size")",
                                          R"("tie_word_embeddings": false, "vocab_size")")),
                        Contains("`text_config.tie_word_embeddings`") && Contains("contradictory"));
    REQUIRE_THROWS_WITH(
        parse(qwen35_with(R"("linear_num_value_heads": 16)", R"("linear_num_value_heads": 24)")),
        Contains("`text_config.linear_num_value_heads`") && Contains("multiple"));
    REQUIRE_THROWS_WITH(
        parse(qwen35_with(R"("partial_rotary_factor": 0.25)", R"("partial_rotary_factor": 0.01171875)")),
        Contains("`text_config.partial_rotary_factor`") && Contains("rotary dim of 3"));
    REQUIRE_THROWS_WITH(
        parse(qwen35_with(R"("partial_rotary_factor": 0.25)", R"("partial_rotary_factor": 0.0039)")),
        Contains("`text_config.partial_rotary_factor`") && Contains("rotary dim of 0"));
}

TEST_CASE("experts are recognised, with their own contradictions", "[models][config]") {
    auto next = synth_config(SynthArch::HybridMoe, SynthSize::Tiny);
    const auto spec = std::get<DecoderSpec>(parse_config(next, "n.json"));
    REQUIRE(spec.moe);
    CHECK(spec.delta->grouped);
    CHECK(spec.moe->experts == 4);
    for (auto& l : spec.layers)
        CHECK(l.moe);
    next["mlp_only_layers"] = json::array{1};
    const auto partly = std::get<DecoderSpec>(parse_config(next, "n.json"));
    CHECK_FALSE(partly.layers[1].moe);
    CHECK(partly.layers[2].moe);
    next["num_experts_per_tok"] = 9;
    REQUIRE_THROWS_WITH(parse_config(next, "n.json"),
                        Contains("`num_experts_per_tok`") && Contains("more than"));
    next["num_experts_per_tok"] = 2;
    next["mlp_only_layers"] = json::array{7};
    REQUIRE_THROWS_WITH(parse_config(next, "n.json"), Contains("`mlp_only_layers`") && Contains("layer 7"));
}

TEST_CASE("qwen3_5_moe is Qwen3.5's hybrid with fused experts in every layer, renormalised, nothing else",
          "[models][config]") {
    auto cfg = synth_config(SynthArch::HybridMoe35, SynthSize::Tiny);
    const auto spec = std::get<DecoderSpec>(parse_config(cfg, "q.json"));
    CHECK(spec.model_type == "qwen3_5_moe");
    CHECK(spec.prefix == "model.language_model.");
    REQUIRE(spec.moe);
    REQUIRE(spec.delta);
    CHECK_FALSE(spec.delta->grouped); // Qwen3.5's flat in_proj_qkv
    CHECK(spec.moe->fused);
    CHECK(spec.moe->norm_topk_prob);
    CHECK(spec.moe->shared_intermediate == 32);
    for (auto& l : spec.layers)
        CHECK(l.moe);
    // Qwen3_5MoeTextConfig's defaults: 256 experts, top 8 of 512, a shared expert of 512.
    auto& text = cfg["text_config"].as_object();
    for (auto key :
         {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size"})
        text.erase(key);
    const auto defaults = std::get<DecoderSpec>(parse_config(cfg, "q.json"));
    CHECK(defaults.moe->experts == 256);
    CHECK(defaults.moe->top_k == 8);
    CHECK(defaults.moe->intermediate == 512);
    CHECK(defaults.moe->shared_intermediate == 512);
    // What would make a layer dense or the top k unnormalised is refused naming the field.
    text["norm_topk_prob"] = false;
    REQUIRE_THROWS_WITH(parse_config(cfg, "q.json"),
                        Contains("`text_config.norm_topk_prob`") && Contains("always renormalises"));
    text.erase("norm_topk_prob");
    text["mlp_only_layers"] = json::array{1};
    REQUIRE_THROWS_WITH(parse_config(cfg, "q.json"), Contains("`text_config.mlp_only_layers`"));
    text.erase("mlp_only_layers");
    text["num_experts"] = 0;
    REQUIRE_THROWS_WITH(parse_config(cfg, "q.json"),
                        Contains("`text_config.num_experts`") && Contains("is 0"));
    text.erase("num_experts");
    cfg.erase("text_config");
    REQUIRE_THROWS_WITH(parse_config(cfg, "q.json"), Contains("`text_config`") && Contains("qwen3_5_moe"));
}

TEST_CASE("the encoder needs its heads' config field and consistent layer types", "[models][config]") {
    auto e = synth_config(SynthArch::Encoder, SynthSize::Tiny);
    const auto spec = std::get<EncoderSpec>(parse_config(e, "e.json"));
    CHECK(spec.local_window == 2);
    CHECK(spec.is_global(0));
    CHECK_FALSE(spec.is_global(1));
    e["layer_types"] = json::array{"full_attention", "full_attention", "sliding_attention"};
    REQUIRE_THROWS_WITH(parse_config(e, "e.json"), Contains("`layer_types`") && Contains("contradictory"));
    e.erase("layer_types");
    e["hidden_activation"] = "relu";
    REQUIRE_THROWS_WITH(parse_config(e, "e.json"), Contains("`hidden_activation`"));
    e.erase("hidden_activation");
    e.erase("num_question_types");
    REQUIRE_THROWS_WITH(parse_config(e, "e.json"), Contains("`num_question_types`") && Contains("heads"));
}

TEST_CASE("a checkpoint whose tensors disagree with its config names the tensor", "[models][config]") {
    ScratchDir d("cfg-tensors");
    tiny(SynthArch::Dense, d / "m");
    const auto good = load_model(d / "m");
    CHECK_NOTHROW(build_graph(good));
    // The config says a wider MLP than the tensors hold.
    auto cfg = read_json_file((d / "m" / "config.json").string()).as_object();
    cfg["intermediate_size"] = 80;
    write_file(d / "m" / "config.json", json::serialize(cfg));
    REQUIRE_THROWS_WITH(build_graph(load_model(d / "m")),
                        Contains("model.safetensors") && Contains("`model.layers.0.mlp.gate_proj.weight`") &&
                            Contains("[64, 32]") && Contains("[80, 32]"));
    // An untied config needs an LM head the checkpoint lacks.
    cfg["intermediate_size"] = 64;
    cfg["tie_word_embeddings"] = false;
    write_file(d / "m" / "config.json", json::serialize(cfg));
    REQUIRE_THROWS_WITH(build_graph(load_model(d / "m")),
                        Contains("`lm_head.weight`") && Contains("does not hold"));
    // A wrong tensor prefix: no embedding anywhere.
    cfg["model_type"] = "modernbert";
    cfg["num_question_types"] = 2;
    write_file(d / "m" / "config.json", json::serialize(cfg));
    REQUIRE_THROWS_WITH(load_model(d / "m"), Contains("embeddings.tok_embeddings.weight"));
}

TEST_CASE("absurd counts are refused before anything is allocated for them", "[models][config]") {
    REQUIRE_THROWS_WITH(parse(qwen3_with(R"("num_hidden_layers": 28)", R"("num_hidden_layers": 1000000000)")),
                        Contains("`num_hidden_layers`") && Contains("more than"));
    auto next = synth_config(SynthArch::HybridMoe, SynthSize::Tiny);
    next["num_experts"] = 100000;
    next["num_experts_per_tok"] = 2;
    REQUIRE_THROWS_WITH(parse_config(next, "n.json"), Contains("`num_experts`") && Contains("more than"));
    // A config implying more tensors than the checkpoint holds fails before listing them.
    ScratchDir d("cfg-count");
    tiny(SynthArch::Dense, d / "m");
    auto cfg = read_json_file((d / "m" / "config.json").string()).as_object();
    cfg["num_hidden_layers"] = 4000;
    write_file(d / "m" / "config.json", json::serialize(cfg));
    REQUIRE_THROWS_WITH(build_graph(load_model(d / "m")), Contains("tensors, but the checkpoint holds"));
}

TEST_CASE("the tensor count matches the tensor list for every spec", "[models][config]") {
    std::vector<boost::json::object> configs;
    for (auto a : {SynthArch::Dense, SynthArch::Hybrid, SynthArch::HybridMoe, SynthArch::Encoder})
        for (auto s : {SynthSize::Tiny, SynthSize::B08})
            configs.push_back(synth_config(a, s));
    for (auto a : {SynthArch::Windowed, SynthArch::Softcap, SynthArch::Mla})
        for (auto s : {SynthSize::Tiny, SynthSize::B01})
            configs.push_back(synth_config(a, s));
    auto enc = synth_config(SynthArch::Encoder, SynthSize::Tiny);
    enc["norm_bias"] = enc["attention_bias"] = enc["mlp_bias"] = true;
    configs.push_back(enc);
    auto q2 = synth_config(SynthArch::Dense, SynthSize::Tiny);
    q2["model_type"] = "qwen2";
    q2["tie_word_embeddings"] = false;
    configs.push_back(q2);
    auto next = synth_config(SynthArch::HybridMoe, SynthSize::Tiny);
    next["mlp_only_layers"] = json::array{0, 3};
    next["shared_expert_intermediate_size"] = 0;
    configs.push_back(next);
    configs.push_back(synth_config(SynthArch::HybridMoe35, SynthSize::Small)); // fused experts
    for (auto& c : configs) {
        const auto spec = parse_config(c, "c.json");
        INFO(describe(spec));
        CHECK(expected_tensor_count(spec) == expected_tensors(spec).size());
    }
}
