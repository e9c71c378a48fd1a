// The f64 reference against values computed by hand on checkpoints small enough to follow: each
// expected number below is written out from the model's formulas for these weights, not taken
// from the code under test.

#include "models/graph_eval.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "models/safetensors_writer.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim::models;
using namespace cardsim::models::test;

namespace {

struct T {
    std::string name;
    std::vector<std::size_t> shape;
    std::vector<double> values;
};

/// Writes `config` and `tensors` (f64, so every value is exact) as a checkpoint in `dir`.
void checkpoint(const std::filesystem::path& dir, const std::string& config, const std::vector<T>& tensors) {
    std::filesystem::create_directories(dir);
    write_file(dir / "config.json", config);
    std::vector<TensorToWrite> plan;
    std::vector<std::vector<double>> values;
    for (auto& t : tensors) {
        plan.push_back({t.name, Dtype::F64, t.shape});
        values.push_back(t.values);
    }
    write_safetensors(dir / "model.safetensors", plan, values);
}

double silu(double x) {
    return x / (1 + std::exp(-x));
}

const double R2 = std::sqrt(2.0);

/// `x / rms(x)` of two numbers (eps 1e-12 is below the tolerance).
std::array<double, 2> rms2(double a, double b) {
    const double r = std::sqrt((a * a + b * b) / 2);
    return {a / r, b / r};
}

} // namespace

TEST_CASE("the dense reference attends with RoPE as worked out by hand", "[models][reference][hand]") {
    // llama, vocab 3, hidden 2, one head of 2 (rotary angle = position), q = k = v = o = identity,
    // MLP silu(h0)·h1 added to both channels.
    ScratchDir d("hand-dense");
    const std::string cfg = R"({"model_type":"llama","vocab_size":3,"hidden_size":2,"intermediate_size":1,
        "num_hidden_layers":1,"num_attention_heads":1,"num_key_value_heads":1,"rms_norm_eps":1e-12,
        "rope_theta":10000,"tie_word_embeddings":true})";
    const std::vector<double> I{1, 0, 0, 1}, ones{1, 1};
    checkpoint(d / "m", cfg,
               {{"model.embed_tokens.weight", {3, 2}, {1, 0, 0, 2, 3, 4}},
                {"model.layers.0.input_layernorm.weight", {2}, ones},
                {"model.layers.0.self_attn.q_proj.weight", {2, 2}, I},
                {"model.layers.0.self_attn.k_proj.weight", {2, 2}, I},
                {"model.layers.0.self_attn.v_proj.weight", {2, 2}, I},
                {"model.layers.0.self_attn.o_proj.weight", {2, 2}, I},
                {"model.layers.0.post_attention_layernorm.weight", {2}, ones},
                {"model.layers.0.mlp.gate_proj.weight", {1, 2}, {1, 0}},
                {"model.layers.0.mlp.up_proj.weight", {1, 2}, {0, 1}},
                {"model.layers.0.mlp.down_proj.weight", {2, 1}, {1, 1}},
                {"model.norm.weight", {2}, ones}});
    const auto m = load_model(d / "m");
    const DecoderReference ref(m.checkpoint);
    const std::vector<std::int64_t> prompt{0, 1};
    const auto logits = ref.prompt_logits(prompt);

    // Token 0 at position 0: h = [√2, 0]; attention to itself gives v = h; x = [1 + √2, 0];
    // MLP: h2 = [√2, 0], silu(√2)·0 = 0; final norm [√2, 0]; logits = E·[√2, 0].
    const std::vector<double> first{R2, 0, 3 * R2};
    CHECK(relative_error(logits[0], first) < 1e-9);

    // Token 1 at position 1: h = [0, √2]; q = k = rot(h, 1) = [−√2 sin 1, √2 cos 1].
    // Scores (scale 1/√2): to key 0 = (−√2 sin 1)(√2)/√2 = −√2 sin 1, to itself = 2/√2 = √2.
    const double s0 = -R2 * std::sin(1.0), s1 = R2;
    const double p0 = std::exp(s0) / (std::exp(s0) + std::exp(s1)), p1 = 1 - p0;
    double x0 = 0 + R2 * p0, x1 = 2 + R2 * p1; // e1 + p0·v0 + p1·v1, v0 = [√2, 0], v1 = [0, √2]
    const auto h2 = rms2(x0, x1);
    const double mlp = silu(h2[0]) * h2[1];
    x0 += mlp;
    x1 += mlp;
    const auto f = rms2(x0, x1);
    const std::vector<double> second{f[0], 2 * f[1], 3 * f[0] + 4 * f[1]};
    CHECK(relative_error(logits[1], second) < 1e-9);

    // Greedy picks the largest logit: token 2 after both.
    const auto g = ref.greedy(prompt, 1);
    CHECK(g.tokens[0] == 2);
}

TEST_CASE("the hybrid reference runs the conv and delta rule as worked out by hand",
          "[models][reference][hand]") {
    // Qwen3.5 text model, one Gated-DeltaNet layer: hidden 2, nk = nv = 1, dk = 1, dv = 2, conv
    // kernel 2 with weights [0.5, 1] (previous, current), β = sigmoid(0) = 1/2, decay e^g with
    // g = −e^0 · softplus(0 + 0) = −ln 2, so e^g = 1/2. Zero-centred norms of zero weights scale by 1.
    ScratchDir d("hand-gdn");
    const std::string cfg =
        R"({"model_type":"qwen3_5_text","vocab_size":2,"hidden_size":2,"intermediate_size":1,
        "num_hidden_layers":1,"num_attention_heads":1,"num_key_value_heads":1,"head_dim":2,"rms_norm_eps":1e-12,
        "layer_types":["linear_attention"],"linear_num_key_heads":1,"linear_num_value_heads":1,
        "linear_key_head_dim":1,"linear_value_head_dim":2,"linear_conv_kernel_dim":2,
        "rope_parameters":{"rope_theta":10000,"partial_rotary_factor":1.0},"tie_word_embeddings":true})";
    const std::string L = "model.layers.0.";
    checkpoint(d / "m", cfg,
               {{"model.embed_tokens.weight", {2, 2}, {1, 0, 0, 1}},
                {L + "input_layernorm.weight", {2}, {0, 0}},
                {L + "linear_attn.in_proj_qkv.weight", {4, 2}, {1, 1, 1, -1, 1, 0, 0, 1}}, // q, k, v0, v1
                {L + "linear_attn.in_proj_z.weight", {2, 2}, {1, 1, 1, 1}},
                {L + "linear_attn.in_proj_b.weight", {1, 2}, {0, 0}},
                {L + "linear_attn.in_proj_a.weight", {1, 2}, {0, 0}},
                {L + "linear_attn.conv1d.weight", {4, 1, 2}, {0.5, 1, 0.5, 1, 0.5, 1, 0.5, 1}},
                {L + "linear_attn.dt_bias", {1}, {0}},
                {L + "linear_attn.A_log", {1}, {0}},
                {L + "linear_attn.norm.weight", {2}, {1, 1}},
                {L + "linear_attn.out_proj.weight", {2, 2}, {1, 0, 0, 1}},
                {L + "post_attention_layernorm.weight", {2}, {0, 0}},
                {L + "mlp.gate_proj.weight", {1, 2}, {0, 0}},
                {L + "mlp.up_proj.weight", {1, 2}, {0, 0}},
                {L + "mlp.down_proj.weight", {2, 1}, {0, 0}},
                {"model.norm.weight", {2}, {0, 0}}});
    const auto m = load_model(d / "m");
    const DecoderReference ref(m.checkpoint);
    const auto logits = ref.prompt_logits(std::vector<std::int64_t>{0, 1});

    auto unit = [](double x) { return x / std::sqrt(x * x + 1e-6); }; // l2norm of one element
    const double A = silu(R2);
    // Token 0: h = [√2, 0] → q = k = √2, v = [√2, 0]; conv (previous zero) keeps them; SiLU.
    const double k0 = unit(A), q0 = unit(A);
    // S = 0·½ + k̂·δ with δ = ½(v − 0) = [A/2, 0]; o = S q̂.
    double S0 = k0 * A / 2, S1 = 0;
    const double o0 = S0 * q0;
    // Gated norm over dv: o / rms(o) · silu(z), z = h·[1, 1] = √2; x = e0 + y.
    const auto y0 = rms2(o0, 0);
    const auto f0 = rms2(1 + y0[0] * A, y0[1] * A);
    CHECK(relative_error(logits[0], std::vector<double>{f0[0], f0[1]}) < 1e-9);

    // Token 1: h = [0, √2] → raw q = √2, k = −√2, v = [0, √2]; conv = ½·previous + current:
    // q 1.5√2, k −0.5√2, v [0.5√2, √2]; then SiLU.
    const double q1 = unit(silu(1.5 * R2)), k1 = unit(silu(-0.5 * R2));
    const double v10 = silu(0.5 * R2), v11 = silu(R2);
    S0 *= 0.5, S1 *= 0.5;                                                // decay
    const double d0 = 0.5 * (v10 - S0 * k1), d1 = 0.5 * (v11 - S1 * k1); // δ = β(v − Sᵀk)
    S0 += k1 * d0, S1 += k1 * d1;
    const auto y1 = rms2(S0 * q1, S1 * q1);
    const auto f1 = rms2(y1[0] * A, 1 + y1[1] * A);
    CHECK(relative_error(logits[1], std::vector<double>{f1[0], f1[1]}) < 1e-9);

    // And the graph, evaluated in double, agrees with the hand values too.
    const auto g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const DecodeRow r0{0, 0}, r1{0, 1};
    CHECK(relative_error(eval.step(std::span(&r0, 1)).logits.row(0), logits[0]) < 1e-12);
    CHECK(relative_error(eval.step(std::span(&r1, 1)).logits.row(0), std::vector<double>{f1[0], f1[1]}) <
          1e-9);
}

TEST_CASE("the encoder reference's heads give the act features worked out by hand",
          "[models][reference][hand]") {
    // ModernBERT, hidden 2, one head, one (global) layer; q = 0 so attention is the mean of the
    // values; LayerNorm of two numbers a, b is ±[1, −1] by the sign of a − b (0 when equal).
    ScratchDir d("hand-enc");
    const std::string cfg =
        R"({"model_type":"modernbert","vocab_size":3,"hidden_size":2,"intermediate_size":1,
        "num_hidden_layers":1,"num_attention_heads":1,"norm_eps":1e-12,"num_question_types":2})";
    checkpoint(d / "m", cfg,
               {{"model.embeddings.tok_embeddings.weight", {3, 2}, {2, 0, 0, 2, 1, 1}},
                {"model.embeddings.norm.weight", {2}, {1, 1}},
                {"model.layers.0.attn.Wqkv.weight", {6, 2}, {0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1}},
                {"model.layers.0.attn.Wo.weight", {2, 2}, {1, 0, 0, 1}},
                {"model.layers.0.mlp_norm.weight", {2}, {1, 1}},
                {"model.layers.0.mlp.Wi.weight", {2, 2}, {1, 0, 0, 1}}, // input = n0, gate = n1
                {"model.layers.0.mlp.Wo.weight", {2, 1}, {1, 0}},
                {"model.final_norm.weight", {2}, {1, 1}},
                {"heads.question_type.weight", {2, 2}, {0, 0, 1, 0}},
                {"heads.marker.weight", {1, 2}, {1, 0.5}},
                {"heads.marker.bias", {1}, {0.25}},
                {"heads.act.weight", {2, 6}, {1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1}},
                {"heads.act.bias", {2}, {0.5, -0.5}}});
    const auto m = load_model(d / "m");
    const EncoderReference ref(m.checkpoint);

    // Three tokens, question type 0: embeddings [2,0], [0,2], [1,1] → LN → [1,−1], [−1,1], [0,0].
    // Attention: mean of the values = [0, 0]. MLP: gelu(n0)·n1 into channel 0 → [1 − gelu(1), −1],
    // [−1 + gelu(−1), 1], [0, 0] → final LN → [1, −1], [−1, 1], [0, 0].
    const std::vector<std::size_t> markers{0, 1, 2};
    const auto r = ref.run(std::vector<std::int64_t>{0, 1, 2}, 0, markers);
    const std::vector<double> logits{1 - 0.5 + 0.25, -1 + 0.5 + 0.25, 0.25};
    CHECK(relative_error(r.marker_logits, logits) < 1e-9);
    const double z = std::exp(0.75) + std::exp(-0.25) + std::exp(0.25);
    const double p[3] = {std::exp(0.75) / z, std::exp(-0.25) / z, std::exp(0.25) / z};
    const double entropy = -(p[0] * std::log(p[0]) + p[1] * std::log(p[1]) + p[2] * std::log(p[2]));
    const std::vector<double> features{1, -1, p[0], p[0] - p[2], entropy / std::log(3.0), 3.0 / 255};
    CHECK(relative_error(r.features, features) < 1e-9);
    CHECK(r.act[0] == Approx(1.5).epsilon(1e-12));
    CHECK(r.act[1] ==
          Approx(p[0] + (p[0] - p[2]) + entropy / std::log(3.0) + 3.0 / 255 - 0.5).epsilon(1e-12));

    // One token of question type 1: [2,0] + [1,0] = [3,0] → [1,−1]; attention to itself adds v → [2,−2];
    // MLP adds −gelu(1) to channel 0; final LN → [1, −1]. One marker: top1 1, margin 1, entropy term 0.
    const std::vector<std::size_t> one{0};
    const auto s = ref.run(std::vector<std::int64_t>{0}, 1, one);
    CHECK(s.marker_logits[0] == Approx(0.75).epsilon(1e-12));
    CHECK(relative_error(s.features, std::vector<double>{1, -1, 1, 1, 0, 1.0 / 255}) < 1e-9);
}
