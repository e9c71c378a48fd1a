// The graph builders' graphs, evaluated in double, against the independent f64 reference: same
// greedy tokens and logits within 1e-9 relative, for every architecture make-model writes.

#include "models/graph_eval.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "support.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim::models;
using namespace cardsim::models::test;

namespace {

constexpr double TOLERANCE = 1e-9;

/// Feeding `tokens` to the reference a batch at a time (all at once, and in two batches, the first
/// skipping its logits but the last) gives every token's logits bit for bit as one token at a time.
void batches_feed_like_single_tokens(const DecoderReference& ref, const std::vector<std::int64_t>& tokens) {
    const auto one_by_one = ref.prompt_logits(tokens);
    auto s = ref.start();
    const auto all = s.feed(tokens, [](std::size_t) { return true; });
    const std::size_t split = tokens.size() / 2;
    auto s2 = ref.start();
    auto first = s2.feed(std::span(tokens).first(split), [&](std::size_t t) { return t + 1 == split; });
    const auto rest = s2.feed(std::span(tokens).subspan(split), [](std::size_t) { return true; });
    REQUIRE(all.size() == tokens.size());
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        INFO("token " << t);
        REQUIRE(all[t].size() == one_by_one[t].size());
        CHECK(std::memcmp(all[t].data(), one_by_one[t].data(), all[t].size() * sizeof(double)) == 0);
        const auto& b = t < split ? first[t] : rest[t - split];
        if (t < split && t + 1 != split) {
            CHECK(b.empty()); // skipped: no LM head
            continue;
        }
        REQUIRE(b.size() == one_by_one[t].size());
        CHECK(std::memcmp(b.data(), one_by_one[t].data(), b.size() * sizeof(double)) == 0);
    }
    CHECK(s2.length() == tokens.size());
}

/// Greedy-decodes `prompt` for `steps` tokens through the graph (prefill as decode steps) and through
/// the reference; requires the same tokens and logits within TOLERANCE at every step.
void decoder_agrees(const std::filesystem::path& dir, std::vector<std::int64_t> prompt, std::size_t steps) {
    const Model m = load_model(dir);
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const DecoderReference ref(m.checkpoint);
    const auto expected = ref.greedy(prompt, steps);
    auto tokens = prompt;
    tokens.insert(tokens.end(), expected.tokens.begin(), expected.tokens.end());
    batches_feed_like_single_tokens(ref, tokens);

    GraphEvaluator::Step last;
    for (auto t : prompt) {
        const DecodeRow row{7, t};
        last = eval.step(std::span(&row, 1));
    }
    for (std::size_t i = 0; i < steps; ++i) {
        INFO("step " << i);
        REQUIRE(last.next.size() == 1);
        CHECK(relative_error(last.logits.row(0), expected.logits[i]) < TOLERANCE);
        REQUIRE(last.next[0] == expected.tokens[i]);
        const DecodeRow row{7, last.next[0]};
        last = eval.step(std::span(&row, 1));
    }
}

/// Feeds two sequences' prompts interleaved in shared steps (a bucket of two rows when both have a
/// token left, one row otherwise); each sequence's logits must match its own reference run.
void batch_agrees(const std::filesystem::path& dir) {
    const Model m = load_model(dir);
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const DecoderReference ref(m.checkpoint);
    const std::vector<std::int64_t> a{3, 17, 42, 5, 9, 60}, b{88, 1, 30};
    const auto ea = ref.prompt_logits(a), eb = ref.prompt_logits(b);
    for (std::size_t i = 0; i < a.size(); ++i) {
        std::vector<DecodeRow> rows{{0, a[i]}};
        if (i < b.size()) rows.push_back({1, b[i]});
        const auto out = eval.step(rows);
        INFO("position " << i);
        CHECK(relative_error(out.logits.row(0), ea[i]) < TOLERANCE);
        if (i < b.size()) CHECK(relative_error(out.logits.row(1), eb[i]) < TOLERANCE);
    }
    CHECK(eval.length(0) == a.size());
    CHECK(eval.length(1) == b.size());
}

/// Writes a synthetic f32 checkpoint of `config` into `dir`.
void variant(const boost::json::object& config, const std::filesystem::path& dir) {
    SynthOptions o;
    o.seed = 2;
    o.dtype = Dtype::F32;
    o.threads = 1;
    write_synthetic(config, o, dir);
}

boost::json::object json_of(const char* text) {
    return boost::json::parse(text).as_object();
}

} // namespace

TEST_CASE("the dense decoder's graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-dense");
    tiny(SynthArch::Dense, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the hybrid decoder's graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-hybrid");
    tiny(SynthArch::Hybrid, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the hybrid decoder with experts' graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-moe");
    tiny(SynthArch::HybridMoe, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the qwen3_moe decoder's graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-qwen3-moe");
    tiny(SynthArch::Moe, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the qwen3_5_moe decoder's graph (fused experts) decodes like the f64 reference",
          "[models][reference]") {
    ScratchDir d("gvr-qwen3-5-moe");
    tiny(SynthArch::HybridMoe35, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the gpt_oss decoder's graph (sinks, windows, YaRN, biased router and experts, clamped SwiGLU) "
          "decodes like the f64 reference",
          "[models][reference]") {
    ScratchDir d("gvr-gpt-oss");
    tiny(SynthArch::GptOss, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("qwen3_moe with its config's defaults (top 8 of 128, not renormalised) and a dense layer decodes "
          "like the reference",
          "[models][reference]") {
    ScratchDir d("gvr-qwen3-moe-defaults");
    auto cfg = synth_config(SynthArch::Moe, SynthSize::Tiny);
    for (auto key : {"num_experts", "num_experts_per_tok", "norm_topk_prob"})
        cfg.erase(key);
    cfg["moe_intermediate_size"] = 8;
    cfg["mlp_only_layers"] = boost::json::array{1};
    variant(cfg, d / "m");
    const auto spec = std::get<DecoderSpec>(load_model(d / "m").spec);
    REQUIRE(spec.moe);
    CHECK(spec.moe->experts == 128);
    CHECK(spec.moe->top_k == 8);
    CHECK_FALSE(spec.moe->norm_topk_prob);
    CHECK(spec.moe->shared_intermediate == 0);
    CHECK(spec.layers[0].moe);
    CHECK_FALSE(spec.layers[1].moe);
    decoder_agrees(d / "m", {9, 8, 7}, 4);
}

TEST_CASE("a bf16 sharded hybrid checkpoint decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-bf16");
    tiny(SynthArch::Hybrid, d / "m", 9, Dtype::BF16, 3);
    decoder_agrees(d / "m", {1, 2, 3}, 4);
}

TEST_CASE("decoder sequences sharing steps each match their own reference", "[models][reference]") {
    ScratchDir d("gvr-batch");
    tiny(SynthArch::Hybrid, d / "h");
    batch_agrees(d / "h");
    tiny(SynthArch::Dense, d / "d");
    batch_agrees(d / "d");
}

TEST_CASE("the encoder's graph gives the f64 reference's marker logits and act outputs",
          "[models][reference]") {
    ScratchDir d("gvr-encoder");
    tiny(SynthArch::Encoder, d / "m");
    const Model m = load_model(d / "m");
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const EncoderReference ref(m.checkpoint);
    // Lengths past the local window (2 each way), 0, 1 and 3 markers, every question type.
    const std::vector<EncoderSequence> batch{
        {{4, 8, 15, 16, 23, 42, 7, 1}, 2, {1, 4, 6}},
        {{90, 3}, 0, {}},
        {{11, 12, 13, 14, 15}, 3, {4}},
        {{50, 51, 52, 53, 54, 55, 56}, 1, {0, 6}},
    };
    const auto out = eval.encode(batch);
    std::size_t marker = 0;
    REQUIRE(out.act.rows == batch.size());
    for (std::size_t s = 0; s < batch.size(); ++s) {
        INFO("sequence " << s);
        const auto r = ref.run(batch[s].tokens, batch[s].question_type, batch[s].markers);
        for (double expected : r.marker_logits) {
            const double got = out.marker_logits.at(marker++, 0);
            CHECK(std::fabs(got - expected) <= TOLERANCE * std::max(1.0, std::fabs(expected)));
        }
        CHECK(relative_error(out.act.row(s), r.act) < TOLERANCE);
    }
    CHECK(marker == out.marker_logits.rows);
}

TEST_CASE("qwen2 (q, k, v biases, no QK norm) decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-qwen2");
    variant(json_of(R"({"model_type":"qwen2","vocab_size":96,"hidden_size":32,"intermediate_size":64,
        "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"rms_norm_eps":1e-6,
        "rope_theta":10000,"tie_word_embeddings":false})"),
            d / "m");
    const auto spec = std::get<DecoderSpec>(load_model(d / "m").spec);
    CHECK(spec.attention.qkv_bias);
    CHECK_FALSE(spec.attention.o_bias);
    CHECK_FALSE(spec.attention.qk_norm);
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 5);
}

TEST_CASE("llama with attention and MLP biases decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-llama");
    variant(json_of(R"({"model_type":"llama","vocab_size":96,"hidden_size":32,"intermediate_size":48,
        "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,"rms_norm_eps":1e-5,
        "rope_theta":500000,"attention_bias":true,"mlp_bias":true,"tie_word_embeddings":true})"),
            d / "m");
    decoder_agrees(d / "m", {1, 2, 3, 4}, 5);
}

TEST_CASE("qwen3 sliding-window layers decode like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-window");
    auto cfg = synth_config(SynthArch::Dense, SynthSize::Tiny);
    cfg["use_sliding_window"] = true;
    cfg["sliding_window"] = 2;
    cfg["max_window_layers"] = 1;
    variant(cfg, d / "m");
    const auto spec = std::get<DecoderSpec>(load_model(d / "m").spec);
    CHECK_FALSE(spec.layers[0].window);
    CHECK(spec.layers[1].window == 2u);
    decoder_agrees(d / "m", {5, 61, 2, 33, 70, 8}, 4);
}

TEST_CASE("qwen3_next without experts, and with unnormalised top-k, decode like the reference",
          "[models][reference]") {
    ScratchDir d("gvr-next");
    auto cfg = synth_config(SynthArch::HybridMoe, SynthSize::Tiny);
    cfg["num_experts"] = 0;
    variant(cfg, d / "dense");
    CHECK_FALSE(std::get<DecoderSpec>(load_model(d / "dense").spec).moe);
    decoder_agrees(d / "dense", {9, 8, 7}, 4);
    cfg = synth_config(SynthArch::HybridMoe, SynthSize::Tiny);
    cfg["norm_topk_prob"] = false;
    cfg["mlp_only_layers"] = boost::json::array{2};
    cfg["shared_expert_intermediate_size"] = 0;
    variant(cfg, d / "moe");
    decoder_agrees(d / "moe", {9, 8, 7}, 4);
}

TEST_CASE("a text-only qwen3_5 without the attention output gate decodes like the reference",
          "[models][reference]") {
    ScratchDir d("gvr-text");
    auto top = synth_config(SynthArch::Hybrid, SynthSize::Tiny);
    auto cfg = top["text_config"].as_object();
    cfg["attn_output_gate"] = false;
    variant(cfg, d / "m");
    const auto m = load_model(d / "m");
    CHECK(std::get<DecoderSpec>(m.spec).prefix == "model.");
    CHECK(m.checkpoint.find("model.layers.3.self_attn.q_proj.weight"));
    decoder_agrees(d / "m", {9, 8, 7}, 4);
}

TEST_CASE("an encoder with norm, attention and MLP biases matches the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-enc-bias");
    auto cfg = synth_config(SynthArch::Encoder, SynthSize::Tiny);
    cfg["norm_bias"] = true;
    cfg["attention_bias"] = true;
    cfg["mlp_bias"] = true;
    cfg.erase("global_rope_theta");
    cfg.erase("local_rope_theta");
    cfg["rope_parameters"] =
        json_of(R"({"full_attention":{"rope_theta":80000},"sliding_attention":{"rope_theta":5000}})");
    variant(cfg, d / "m");
    const Model m = load_model(d / "m");
    CHECK(std::get<EncoderSpec>(m.spec).global_theta == 80000);
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const EncoderReference ref(m.checkpoint);
    const std::vector<EncoderSequence> batch{{{4, 8, 15, 16, 23, 42}, 1, {0, 5}}, {{7}, 3, {0}}};
    const auto out = eval.encode(batch);
    std::size_t marker = 0;
    for (std::size_t s = 0; s < batch.size(); ++s) {
        const auto r = ref.run(batch[s].tokens, batch[s].question_type, batch[s].markers);
        for (double expected : r.marker_logits)
            CHECK(std::fabs(out.marker_logits.at(marker++, 0) - expected) <=
                  TOLERANCE * std::max(1.0, std::fabs(expected)));
        CHECK(relative_error(out.act.row(s), r.act) < TOLERANCE);
    }
}

TEST_CASE("the windowed decoder's graph (mistral) decodes like the f64 reference past its window",
          "[models][reference]") {
    ScratchDir d("gvr-windowed");
    tiny(SynthArch::Windowed, d / "m"); // a window of 4 positions on every layer
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
    batch_agrees(d / "m");
}

TEST_CASE("the soft-capped decoder's graph (gemma2) decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-gemma2");
    tiny(SynthArch::Softcap, d / "m"); // layer 0 slides within 4 positions
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
    batch_agrees(d / "m");
    // Exact GELU, no soft caps, transformers' default layer types (the even layers slide).
    auto c = synth_config(SynthArch::Softcap, SynthSize::Tiny);
    c["hidden_activation"] = "gelu";
    c["attn_logit_softcapping"] = nullptr;
    c["final_logit_softcapping"] = nullptr;
    c["num_hidden_layers"] = 3;
    c.erase("layer_types");
    variant(c, d / "v");
    decoder_agrees(d / "v", {5, 61, 2, 33, 70}, 4);
}

TEST_CASE(
    "the latent-attention decoder's absorbed graph (deepseek_v3) decodes like the un-absorbed f64 reference",
    "[models][reference]") {
    ScratchDir d("gvr-deepseek");
    tiny(SynthArch::Mla, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
    batch_agrees(d / "m");
    // DeepSeek-V2-Lite's form: one q_proj, complex-pair rotary; and V3 with NeoX rotary.
    auto v2 = synth_config(SynthArch::Mla, SynthSize::Tiny);
    v2["model_type"] = "deepseek_v2";
    v2["q_lora_rank"] = nullptr;
    variant(v2, d / "v2");
    decoder_agrees(d / "v2", {5, 61, 2, 33, 70}, 4);
    auto neox = synth_config(SynthArch::Mla, SynthSize::Tiny);
    neox["rope_interleave"] = false;
    variant(neox, d / "neox");
    decoder_agrees(d / "neox", {5, 61, 2, 33, 70}, 4);
}
