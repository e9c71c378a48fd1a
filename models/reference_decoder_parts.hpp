#pragma once
// The decoder reference's parts, private to models/: its config values and tensors, and per op
// family the tensors a layer loads and the forward pass of one token, so that a new family adds a
// file rather than growing a shared one:
//   reference_decoder.cpp            config.json, the layers, sessions and the token loop
//   reference_decoder_attention.cpp  softmax attention (plain, gated, windowed) and latent attention
//   reference_decoder_mixer.cpp      the Gated-DeltaNet mixer
//   reference_decoder_ffn.cpp        the dense MLP
//   reference_decoder_experts.cpp    the sparse mixture of experts
//   reference_decoder_head.cpp       the embedding and the logits

#include "models/reference.hpp"
#include "models/reference_common.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cardsim::models {

/// The config values and tensors of a decoder, in double.
struct DecoderReference::Weights {
    struct Layer {
        bool linear = false;               // Gated-DeltaNet
        std::optional<std::size_t> window; // sliding-window attention
        reference::Vec input_norm, post_norm;
        reference::Linear q, k, v, o; // attention
        reference::Vec q_norm, k_norm;
        reference::Linear qkv, z, b, a, qkvz, ba, out; // Gated-DeltaNet
        reference::Vec conv, dt_bias, a_log, norm;     // conv [conv_dim, K]
        reference::Linear gate, up, down;              // dense MLP
        reference::Vec pre_ff_norm, post_ff_norm;      // Gemma-2's sandwich norms
        reference::Linear q_a, q_b, kv_a, kv_b;        // DeepSeek's latent attention (q_a empty: one q)
        reference::Vec q_a_norm, kv_a_norm;
        reference::Linear router; // experts
        std::vector<reference::Linear> eg, eu, ed;
        reference::Linear sg, su, sd, sgate; // shared expert and its gate
        reference::Vec sinks;                // gpt-oss: a logit per head in each softmax
    };
    std::size_t vocab = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, rotary_dim = 0;
    std::size_t nk = 0, nv = 0, dk = 0, dv = 0, kernel = 4, top_k = 0;
    double eps = 1e-6, theta = 10000.0;
    bool zero_centred = false, norm_topk = true;
    double embed_scale = 1.0;                          // Gemma-2: √hidden
    std::optional<double> scaling;                     // the scores' scale, head_dim^-½ when absent
    std::optional<double> attn_softcap, final_softcap; // Gemma-2
    enum class Act { Silu, Gelu, GeluTanh } act = Act::Silu;
    // DeepSeek: latent sizes and the rotary form (V2 complex pairs, V3 de-interleave then NeoX).
    bool latent = false;
    std::size_t kv_rank = 0, nope = 0, rope_dim = 0, v_dim = 0;
    enum class Rotary { NeoX, Complex, Deinterleave } rotary = Rotary::NeoX;
    // gpt-oss: YaRN's frequencies (f64) and attention factor, the router's top k of its logits then a
    // softmax over them, and the clamped SwiGLU's limit and alpha.
    std::vector<double> yarn_freqs;
    double yarn_factor = 1.0;
    bool oss = false;
    double swiglu_limit = 7.0, swiglu_alpha = 1.702;
    reference::Linear embed; // [vocab, hidden], read row by row (the tied head's matrix too)
    reference::Vec final_norm;
    reference::Linear lm_head; // empty when tied
    std::vector<Layer> layers;
};

namespace reference::decoder {

using Weights = DecoderReference::Weights;
using Layer = Weights::Layer;

/// The per-layer state of one sequence.
struct LayerState {
    std::vector<Vec> keys, values; // per position
    std::vector<Vec> history;      // the last K conv inputs, oldest first
    Vec S;                         // nv × dk × dv
};

// ---- attention (reference_decoder_attention.cpp) ----

/// Loads a softmax attention's projections and QK norms (`p` the layer's prefix).
void load_attention(const Checkpoint& c, const std::string& p, Layer& l);
/// Loads a latent attention's projections and norms (DeepSeek).
void load_latent_attention(const Checkpoint& c, const std::string& p, Layer& l);
/// softmax attention of consecutive tokens from position `pos`, each over its cache (Qwen3Attention /
/// Qwen3NextAttention / LlamaAttention); the projections of all of them at once.
Rows attention(const Weights& W, const Layer& l, LayerState& s, const Rows& h, std::size_t pos);
/// DeepseekV2Attention / DeepseekV3Attention for consecutive tokens from position `pos`, un-absorbed:
/// keys [k_nope | k_pe] and values per head, from the normed latent through kv_b_proj.
Rows latent_attention(const Weights& W, const Layer& l, LayerState& s, const Rows& h, std::size_t pos);

// ---- the Gated-DeltaNet mixer (reference_decoder_mixer.cpp) ----

/// Loads a Gated-DeltaNet's projections, conv, gates and norm.
void load_deltanet(const Checkpoint& c, const std::string& p, Layer& l);
/// Consecutive tokens of a Gated-DeltaNet (Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet, recurrent
/// path, one token after the other; the projections of all of them at once).
Rows deltanet(const Weights& W, const Layer& l, LayerState& s, const Rows& h);

// ---- feed-forward (reference_decoder_ffn.cpp) ----

/// Loads the dense MLP's gate, up and down projections.
void load_mlp(const Checkpoint& c, const std::string& p, Layer& l);
/// `down(silu(gate(x)) · up(x))`.
Rows swiglu(const Linear& gate, const Linear& up, const Linear& down, const Rows& x);
/// The dense MLP `down(act(gate(x)) · up(x))`: SiLU, or Gemma's GELU (`gelu` exact, otherwise
/// transformers' `gelu_pytorch_tanh` formula).
Rows mlp(const Weights& W, const Layer& l, const Rows& x);

// ---- experts (reference_decoder_experts.cpp) ----

/// Loads a sparse MoE block: router, experts, and the shared expert with its gate when present.
void load_experts(const Checkpoint& c, const std::string& p, Layer& l);
/// Qwen3MoeSparseMoeBlock / Qwen3NextSparseMoeBlock for each token (the shared expert when loaded);
/// each chosen expert runs once on the tokens that chose it.
Rows experts(const Weights& W, const Layer& l, const Rows& x);
/// Loads gpt-oss's MoE block (GptOssMLP): the router with its bias, and each expert of the
/// `[E, H, 2I]` gate_up_proj (gate and up interleaved) and `[E, I, H]` down_proj with their biases.
void load_oss_experts(const Checkpoint& c, const std::string& p, std::size_t experts, Layer& l);
/// GptOssMLP for each token: top k of the router's logits, a softmax over them, each expert's
/// clamped SwiGLU.
Rows oss_experts(const Weights& W, const Layer& l, const Rows& x);

// ---- embedding and logits (reference_decoder_head.cpp) ----

/// Loads the embedding table (`prefix` its module's), the final norm and, untied, the LM head.
void load_head(const Checkpoint& c, const std::string& prefix, bool tied, Weights& W);
/// The embedding of `token` times the embedding scale; a token outside the vocabulary is a cardsim::Error.
Vec embed(const Weights& W, std::int64_t token);
/// The logits of each final hidden state of `x` (normed here), softcapped when the model caps them.
Rows logits(const Weights& W, const Rows& x);

} // namespace reference::decoder
} // namespace cardsim::models
