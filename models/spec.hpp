#pragma once
// What a recogniser finds in a checkpoint: the architecture and every shape its graph needs.

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cardsim::models {

/// The decoder families the recognisers know, by their transformers `model_type`.
enum class DecoderFamily {
    Qwen3,      ///< `qwen3`: GQA with QK RMSNorm, SwiGLU
    Qwen2,      ///< `qwen2`: GQA with q/k/v biases, no QK norm
    Llama,      ///< `llama`: GQA, optional attention and MLP biases
    Qwen3Next,  ///< `qwen3_next`: hybrid, grouped `in_proj_qkvz`/`in_proj_ba`, usually experts
    Qwen3_5,    ///< `qwen3_5` / `qwen3_5_text`: hybrid, flat `in_proj_qkv`, `in_proj_z/b/a`
    Mistral,    ///< `mistral`: Llama's layers, every layer a sliding window
    Gemma2,     ///< `gemma2`: soft caps, alternating windows, scaled embedding, GeGLU, four norms a layer
    DeepseekV2, ///< `deepseek_v2`: multi-head latent attention (interleaved rotary)
    DeepseekV3, ///< `deepseek_v3`: multi-head latent attention (`rope_interleave`)
    Qwen3Moe,   ///< `qwen3_moe`: Qwen3's attention, a mixture of experts in every sparse layer
    Qwen3_5Moe, ///< `qwen3_5_moe` / `qwen3_5_moe_text`: Qwen3.5's hybrid, experts in every layer, fused
    GptOss,     ///< `gpt_oss`: sinks, alternating windows, YaRN, biased router and experts, clamped SwiGLU
};

/// The `model_type` spelling of a family (`qwen3_5` for Qwen3_5).
std::string_view name(DecoderFamily f);

/// A decoder layer's token mixer.
enum class Mixer {
    Attention,      ///< softmax attention over the sequence's KV cache (`full_attention`)
    GatedDeltaNet,  ///< Gated-DeltaNet linear attention (`linear_attention`)
    LatentAttention ///< DeepSeek's multi-head latent attention
};

/// The activation of a dense MLP `down(act(gate(x)) · up(x))`.
enum class Activation {
    Silu,     ///< SwiGLU (`silu`)
    Gelu,     ///< exact erf GELU (`gelu`)
    GeluTanh, ///< GELU's tanh approximation (`gelu_pytorch_tanh`, `gelu_new`)
};

/// YaRN rotary scaling (`rope_type: yarn`, transformers' `_compute_yarn_parameters`): each pair's
/// inverse frequency blends theta's (extrapolated) and theta's over `factor` (interpolated) by a
/// ramp between the pairs that turn `beta_fast` and `beta_slow` times over `original_max`
/// positions (`truncate`: the ramp's ends rounded to whole pairs), and cos and sin are scaled by
/// `attention_factor`.
struct Yarn {
    double factor = 1;
    double beta_fast = 32, beta_slow = 1;
    std::size_t original_max = 4096;
    bool truncate = true;
    double attention_factor = 1;
    friend bool operator==(const Yarn&, const Yarn&) = default;
};

/// The attention of a decoder's attention layers.
struct AttentionShape {
    std::size_t heads = 0;
    std::size_t kv_heads = 0;
    std::size_t head_dim = 0;
    std::size_t rotary_dim = 0; ///< the first `rotary_dim` of each head rotate (partial rotary)
    double theta = 10000.0;
    bool qk_norm = false;          ///< RMSNorm of each query and key head before RoPE
    bool output_gate = false;      ///< `q_proj` holds each head's query and output gate
    bool qkv_bias = false;         ///< q, k, v projections have biases
    bool o_bias = false;           ///< the output projection has a bias
    std::optional<double> scale;   ///< the scores' scale; head_dim^-½ when absent
    std::optional<double> softcap; ///< scores become `softcap · tanh(score / softcap)` (Gemma-2)
    bool interleaved = false;      ///< rotary pairs (2i, 2i + 1) rather than (i, i + rotary_dim/2)
    bool sinks = false;            ///< a learnt per-head logit in each softmax (`self_attn.sinks`, gpt-oss)
    std::optional<Yarn> yarn;      ///< YaRN rotary scaling, else theta's plain frequencies
};

/// DeepSeek's multi-head latent attention (`DeepseekV2Attention`): queries through a low-rank
/// `q_a_proj` / `q_b_proj` (or one `q_proj`), keys and values from one latent row per position.
struct LatentShape {
    std::size_t q_rank = 0;  ///< `q_lora_rank`, 0 for a plain `q_proj`
    std::size_t kv_rank = 0; ///< `kv_lora_rank`: the latent row cached per position
    std::size_t nope = 0;    ///< `qk_nope_head_dim`
    std::size_t rope = 0;    ///< `qk_rope_head_dim`, the rotated part (its key shared by every head)
    std::size_t value = 0;   ///< `v_head_dim`
    std::size_t qk_dim() const { return nope + rope; }
};

/// The Gated-DeltaNet of a hybrid's linear-attention layers.
struct DeltaShape {
    std::size_t key_heads = 0;   ///< nk
    std::size_t value_heads = 0; ///< nv, a multiple of nk
    std::size_t key_dim = 0;     ///< dk
    std::size_t value_dim = 0;   ///< dv
    std::size_t kernel = 4;      ///< causal conv kernel
    bool grouped =
        false; ///< Qwen3-Next `in_proj_qkvz` / `in_proj_ba` grouped per key head (else Qwen3.5 flat)
    std::size_t conv_dim() const { return 2 * key_heads * key_dim + value_heads * value_dim; }
};

/// A mixture-of-experts MLP (`Qwen3MoeSparseMoeBlock`, Qwen3-Next `Qwen3NextSparseMoeBlock`).
struct MoeShape {
    std::size_t experts = 0;
    std::size_t top_k = 0;
    std::size_t intermediate = 0;        ///< each expert's
    std::size_t shared_intermediate = 0; ///< the shared expert's, 0 for none
    bool norm_topk_prob = true;          ///< renormalise the top-k router probabilities to sum 1
    /// The routed experts are two fused tensors a layer (`qwen3_5_moe`): `mlp.experts.gate_up_proj`
    /// [E, 2·intermediate, H] (each expert's gate rows, then its up rows) and `mlp.experts.down_proj`
    /// [E, H, intermediate]; else three `mlp.experts.<e>.{gate,up,down}_proj.weight` an expert.
    bool fused = false;
    /// gpt-oss's layout (`GptOssExperts`): `mlp.experts.gate_up_proj` [E, H, 2·intermediate] (input
    /// rows; each expert's gate and up columns interleaved, gate first) and `mlp.experts.down_proj`
    /// [E, intermediate, H], with biases `gate_up_proj_bias` [E, 2·intermediate] and
    /// `down_proj_bias` [E, H]; the router `mlp.router` [E, H] with its bias.
    bool transposed = false;
    bool router_bias = false; ///< the router's logits add a bias
    bool expert_bias = false; ///< each expert's projections add biases
    /// gpt-oss's clamped SwiGLU: gate ≤ limit, up in [−limit, limit], then (up + 1) · gate · σ(alpha · gate).
    std::optional<double> swiglu_limit;
    double swiglu_alpha = 1.702;
};

/// One decoder layer: its mixer, its attention window (sliding-window layers), and whether its MLP
/// is the mixture of experts.
struct DecoderLayer {
    Mixer mixer = Mixer::Attention;
    std::optional<std::size_t> window;
    bool moe = false;
    friend bool operator==(const DecoderLayer&, const DecoderLayer&) = default;
};

/// A recognised decoder.
struct DecoderSpec {
    DecoderFamily family = DecoderFamily::Qwen3;
    std::string model_type; ///< as config.json spells it
    std::string prefix;     ///< tensor name prefix of the language model: `model.` or `model.language_model.`
    std::size_t vocab = 0;
    std::size_t hidden = 0;
    std::size_t intermediate = 0; ///< the dense MLP's
    double eps = 1e-6;            ///< every RMSNorm's
    bool zero_centred = false;    ///< RMSNorms scale by (1 + w)
    bool tied = false;            ///< the LM head is the embedding
    bool mlp_bias = false;
    Activation activation = Activation::Silu;
    std::optional<double> embed_scale;   ///< the embedding is multiplied by this (Gemma-2: √hidden)
    std::optional<double> final_softcap; ///< logits become `cap · tanh(logit / cap)` (Gemma-2)
    bool sandwich_norms = false; ///< Gemma-2: the attention and MLP outputs are normed before the residual
    AttentionShape attention;
    std::optional<LatentShape> latent; ///< DeepSeek's attention layers
    std::optional<DeltaShape> delta;
    std::optional<MoeShape> moe;
    std::vector<DecoderLayer> layers;
};

/// A recognised ModernBERT encoder with the seed's heads.
struct EncoderSpec {
    std::string prefix; ///< `model.` or empty
    std::size_t vocab = 0;
    std::size_t hidden = 0;
    std::size_t heads = 0;
    std::size_t intermediate = 0;
    std::size_t layers = 0;
    double eps = 1e-5;
    bool norm_bias = false;
    bool attention_bias = false;
    bool mlp_bias = false;
    std::size_t global_every = 3;  ///< layer i is global iff i % global_every == 0
    std::size_t local_window = 64; ///< local layers attend |i − j| ≤ this (`local_attention` / 2)
    double global_theta = 160000.0;
    double local_theta = 10000.0;
    std::size_t question_types = 0; ///< rows of the question-type table
    std::size_t head_dim() const { return hidden / heads; }
    bool is_global(std::size_t layer) const { return layer % global_every == 0; }
};

/// What a checkpoint is.
using ModelSpec = std::variant<DecoderSpec, EncoderSpec>;

/// The architecture kind for people: `dense decoder (qwen3)`, `hybrid decoder (qwen3_5)`,
/// `hybrid decoder with experts (qwen3_next)`, `encoder (modernbert)`.
std::string describe(const ModelSpec& spec);

/// Each layer's kind in one word per layer: `attention`, `attention(window 4096)`, `deltanet`,
/// with `+moe` when its MLP has experts; encoder layers are `global` or `local(window 64)`.
std::vector<std::string> layer_kinds(const ModelSpec& spec);

/// A decoder's experts for people, or nothing without them: `8 in each of 2 layers, 2 chosen per
/// token (softmax over the chosen), 16 wide; no shared expert`.
std::optional<std::string> describe_experts(const ModelSpec& spec);

/// The parameters a token reads of a decoder with `total` parameters: all but the experts it does
/// not choose (`total` without experts, and for encoders).
std::size_t active_parameters(const ModelSpec& spec, std::size_t total);

} // namespace cardsim::models
