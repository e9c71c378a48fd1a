#include "models/synthetic.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "models/recognise.hpp"
#include "models/safetensors_writer.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace cardsim::models {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 10> arch_names{"dense",        "hybrid",  "hybrid-moe", "encoder",
                                                      "windowed",     "softcap", "mla",        "moe",
                                                      "hybrid-moe35", "gpt-oss"};
constexpr std::array<std::string_view, 4> size_names{"tiny", "small", "0.1b", "0.8b"};

/// The shape parameters of one synthetic decoder.
struct DecoderSize {
    std::size_t vocab, hidden, layers, heads, kv_heads, head_dim, intermediate;
    std::size_t nk = 0, nv = 0, dk = 0, dv = 0;                          // Gated-DeltaNet
    std::size_t experts = 0, top_k = 0, moe_inter = 0, shared_inter = 0; // experts
};

/// The shape parameters of one synthetic encoder.
struct EncoderSize {
    std::size_t vocab, hidden, layers, heads, intermediate, local, question_types;
};

DecoderSize decoder_size(SynthArch a, SynthSize s) {
    const auto i = static_cast<std::size_t>(s);
    if (a == SynthArch::Dense) {
        constexpr std::array<DecoderSize, 4> t{{
            {96, 32, 2, 4, 2, 8, 64},
            {512, 128, 4, 4, 2, 32, 384},
            {32768, 768, 12, 12, 4, 64, 2048},
            {151936, 1024, 28, 16, 8, 128, 3072}, // Qwen3-0.6B
        }};
        return t[i];
    }
    if (a == SynthArch::Hybrid) {
        constexpr std::array<DecoderSize, 4> t{{
            {96, 32, 4, 2, 1, 16, 64, 2, 4, 8, 8},
            {512, 128, 8, 4, 2, 32, 384, 4, 8, 16, 16},
            {32768, 768, 12, 6, 2, 128, 2048, 6, 12, 64, 64},
            {248320, 1024, 24, 8, 2, 256, 3584, 16, 16, 128, 128}, // Qwen3.5-0.8B
        }};
        return t[i];
    }
    if (a == SynthArch::HybridMoe35) {
        // Qwen3.5-35B-A3B's layout (the hybrid's, experts fused, a shared expert; no dense MLP).
        if (s != SynthSize::Tiny && s != SynthSize::Small)
            throw Error(
                fmt::format("make-model writes --arch hybrid-moe35 in tiny or small, not {}", size_names[i]));
        constexpr std::array<DecoderSize, 2> t{{
            {96, 32, 4, 2, 1, 16, 0, 2, 4, 8, 8, 4, 2, 16, 32},
            {512, 128, 8, 4, 2, 32, 0, 4, 8, 16, 16, 8, 2, 64, 128},
        }};
        return t[i];
    }
    if (a == SynthArch::GptOss) {
        // gpt-oss-20b's layout at test sizes: vocab, hidden, layers, heads, kv heads, head_dim; the
        // experts, top k and their intermediate (its window in gpt_oss_config).
        if (s != SynthSize::Tiny && s != SynthSize::Small)
            throw Error(
                fmt::format("make-model writes --arch gpt-oss in tiny or small, not {}", size_names[i]));
        constexpr std::array<DecoderSize, 2> t{{
            {96, 32, 2, 4, 2, 8, 0, 0, 0, 0, 0, 4, 2, 16, 0},
            {512, 128, 4, 4, 2, 32, 0, 0, 0, 0, 0, 8, 2, 64, 0},
        }};
        return t[i];
    }
    if (a == SynthArch::Moe) {
        // Qwen3-30B-A3B's layout (every layer sparse, no shared expert) at test sizes.
        if (s != SynthSize::Tiny && s != SynthSize::Small)
            throw Error(fmt::format("make-model writes --arch moe in tiny or small, not {}", size_names[i]));
        constexpr std::array<DecoderSize, 2> t{{
            {96, 32, 2, 4, 2, 8, 64, 0, 0, 0, 0, 8, 2, 16, 0},
            {512, 128, 4, 4, 2, 32, 384, 0, 0, 0, 0, 16, 4, 64, 0},
        }};
        return t[i];
    }
    constexpr std::array<DecoderSize, 4> t{{
        {96, 32, 4, 2, 1, 16, 64, 2, 4, 8, 8, 4, 2, 16, 32},
        {512, 128, 8, 4, 2, 32, 384, 4, 8, 16, 16, 8, 2, 64, 128},
        {32768, 512, 12, 4, 2, 128, 1536, 4, 8, 64, 64, 8, 2, 256, 512},
        {151936, 1024, 24, 8, 2, 256, 3072, 16, 16, 128, 128, 16, 4, 192, 512},
    }};
    return t[i];
}

/// The shape parameters of the windowed (Mistral), softcap (Gemma-2) and mla (DeepSeek-V3) decoders.
struct VariantSize {
    std::size_t vocab, hidden, layers, heads, kv_heads, head_dim, intermediate, window;
    std::size_t q_rank = 0, kv_rank = 0, nope = 0, rope = 0, value = 0; // latent attention
};

VariantSize variant_size(SynthArch a, SynthSize s) {
    if (s == SynthSize::B08)
        throw Error(fmt::format("make-model writes --arch {} in tiny, small or 0.1b, not 0.8b",
                                arch_names[static_cast<std::size_t>(a)]));
    const auto i = static_cast<std::size_t>(s);
    if (a == SynthArch::Mla) {
        constexpr std::array<VariantSize, 3> t{{
            {96, 32, 2, 4, 4, 12, 64, 0, 16, 16, 8, 4, 8},
            {512, 128, 4, 4, 4, 24, 384, 0, 64, 32, 16, 8, 16},
            {32768, 768, 12, 12, 12, 96, 2048, 0, 384, 256, 64, 32, 64},
        }};
        return t[i];
    }
    constexpr std::array<VariantSize, 3> t{{
        {96, 32, 2, 4, 2, 8, 64, 4},
        {512, 128, 4, 4, 2, 32, 384, 16},
        {32768, 768, 12, 12, 4, 64, 2048, 4096},
    }};
    return t[i];
}

/// The config.json of the windowed, softcap and mla architectures.
json::object variant_config(SynthArch arch, SynthSize size) {
    const auto d = variant_size(arch, size);
    json::object c{
        {"vocab_size", d.vocab},
        {"hidden_size", d.hidden},
        {"intermediate_size", d.intermediate},
        {"num_hidden_layers", d.layers},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"rms_norm_eps", 1e-6},
        {"rope_theta", 10000.0},
        {"attention_bias", false},
        {"torch_dtype", "bfloat16"},
    };
    if (arch == SynthArch::Windowed) {
        c["architectures"] = json::array{"MistralForCausalLM"};
        c["model_type"] = "mistral";
        c["head_dim"] = d.head_dim;
        c["hidden_act"] = "silu";
        c["sliding_window"] = d.window;
        c["max_position_embeddings"] = 32768;
        c["tie_word_embeddings"] = false;
        c.erase("attention_bias"); // MistralConfig has none
    } else if (arch == SynthArch::Softcap) {
        json::array types;
        for (std::size_t i = 0; i < d.layers; ++i)
            types.emplace_back((i + 1) % 2 ? "sliding_attention" : "full_attention");
        c["architectures"] = json::array{"Gemma2ForCausalLM"};
        c["model_type"] = "gemma2";
        c["head_dim"] = d.head_dim;
        c["hidden_activation"] = "gelu_pytorch_tanh";
        c["hidden_act"] = "gelu_pytorch_tanh";
        c["query_pre_attn_scalar"] = d.head_dim;
        c["sliding_window"] = d.window;
        c["layer_types"] = std::move(types);
        c["attn_logit_softcapping"] = 50.0;
        c["final_logit_softcapping"] = 30.0;
        c["max_position_embeddings"] = 8192;
        c["tie_word_embeddings"] = true;
    } else {
        // DeepSeek-V3's fields, every layer dense (first_k_dense_replace = num_hidden_layers).
        c["architectures"] = json::array{"DeepseekV3ForCausalLM"};
        c["model_type"] = "deepseek_v3";
        c["hidden_act"] = "silu";
        c["q_lora_rank"] = d.q_rank;
        c["kv_lora_rank"] = d.kv_rank;
        c["qk_nope_head_dim"] = d.nope;
        c["qk_rope_head_dim"] = d.rope;
        c["v_head_dim"] = d.value;
        c["head_dim"] = d.rope;
        c["rope_interleave"] = true;
        c["first_k_dense_replace"] = d.layers;
        c["n_routed_experts"] = 4;
        c["n_shared_experts"] = 1;
        c["num_experts_per_tok"] = 2;
        c["moe_intermediate_size"] = d.intermediate / 4;
        c["n_group"] = 1;
        c["topk_group"] = 1;
        c["routed_scaling_factor"] = 1.0;
        c["norm_topk_prob"] = true;
        c["max_position_embeddings"] = 4096;
        c["tie_word_embeddings"] = false;
    }
    return c;
}

EncoderSize encoder_size(SynthSize s) {
    constexpr std::array<EncoderSize, 4> t{{
        {96, 32, 3, 4, 48, 4, 4},
        {512, 128, 6, 4, 192, 16, 8},
        {50368, 768, 22, 12, 1152, 128, 16},  // ModernBERT-base
        {50368, 1024, 28, 16, 2624, 128, 16}, // ModernBERT-large
    }};
    return t[static_cast<std::size_t>(s)];
}

json::array layer_types(std::size_t layers) {
    json::array out;
    for (std::size_t i = 0; i < layers; ++i)
        out.emplace_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
    return out;
}

/// splitmix64's finaliser: a bijective 64-bit mix.
constexpr std::uint64_t mix(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/// The FNV-1a hash of `s`.
std::uint64_t hash(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s)
        h = (h ^ c) * 0x100000001b3ull;
    return h;
}

/// Approximately standard normal from one 64-bit draw: Irwin–Hall of four 16-bit uniforms.
double normal(std::uint64_t u) {
    const double s =
        static_cast<double>((u & 0xffff) + ((u >> 16) & 0xffff) + ((u >> 32) & 0xffff) + (u >> 48));
    return (s / 65536.0 - 2.0) * 1.7320508075688772; // variance of the sum of four U(0,1) is 1/3
}

/// Uniform in [0, 1) from one 64-bit draw.
double uniform(std::uint64_t u) {
    return static_cast<double>(u >> 11) * 0x1.0p-53;
}

/// The per-tensor key of tensor `name` in a checkpoint of `seed`.
std::uint64_t tensor_key(std::string_view name, std::uint64_t seed) {
    return mix(seed ^ hash(name));
}

/// The values of one tensor: its role's scale worked out once, then a value per element index.
class TensorValues {
public:
    TensorValues(const TensorSpec& t, std::uint64_t key) : role_(t.role), key_(key) {
        // A projection's input is its last dimension ([out, in], a fused expert tensor [E, out, in]).
        std::size_t fan_in = t.shape.size() > 1 ? t.shape.back() : 1;
        if (t.role == Role::LinearInOut && t.shape.size() > 1) fan_in = t.shape[t.shape.size() - 2];
        switch (t.role) {
        case Role::LinearInOut:
        case Role::Embedding:
        case Role::Table:
        case Role::Linear:
            scale_ = 1.0 / std::sqrt(static_cast<double>(fan_in));
            break;
        case Role::Conv:
            scale_ = 1.0 / std::sqrt(static_cast<double>(t.shape.back()));
            break;
        case Role::Bias:
            scale_ = 0.02;
            break;
        default:
            scale_ = 0.1;
        }
    }

    /// The value of element `i`.
    double operator()(std::size_t i) const {
        const std::uint64_t u = mix(key_ + i * 0xd1b54a32d192ed03ull);
        switch (role_) {
        case Role::Norm:
        case Role::ZeroCentredNorm: {
            const bool outlier = mix(key_ ^ (i * 0x632be59bd9b4e019ull)) % 64 == 0;
            const double w = (outlier ? 4.0 : 1.0) + scale_ * normal(u);
            return role_ == Role::Norm ? w : w - 1.0;
        }
        case Role::ALog:
            return std::log(1.0 + 15.0 * uniform(u));
        case Role::DtBias: {
            const double dt = std::exp(std::log(0.001) + uniform(u) * (std::log(0.1) - std::log(0.001)));
            return dt + std::log(-std::expm1(-dt)); // softplus⁻¹(dt)
        }
        default:
            return scale_ * normal(u);
        }
    }

private:
    Role role_;
    std::uint64_t key_;
    double scale_ = 1.0;
};

/// The expert fields of `d` (with the shared expert's when it has one): every layer sparse, renormalised.
void add_experts(json::object& c, const DecoderSize& d) {
    c["num_experts"] = d.experts;
    c["num_experts_per_tok"] = d.top_k;
    c["moe_intermediate_size"] = d.moe_inter;
    if (d.shared_inter > 0) c["shared_expert_intermediate_size"] = d.shared_inter;
    c["norm_topk_prob"] = true;
    c["decoder_sparse_step"] = 1;
    c["mlp_only_layers"] = json::array{};
}

/// GptOssConfig's fields for a decoder of shape `d` (gpt-oss-20b's values for what `d` does not
/// give): layers alternating a sliding window of `window` and full attention, YaRN of factor 32
/// over 4,096 original positions, biases, `swiglu_limit` 7.
json::object gpt_oss_config(const DecoderSize& d, std::size_t window) {
    json::array types;
    for (std::size_t i = 0; i < d.layers; ++i)
        types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
    return json::object{
        {"architectures", json::array{"GptOssForCausalLM"}},
        {"model_type", "gpt_oss"},
        {"vocab_size", d.vocab},
        {"hidden_size", d.hidden},
        {"intermediate_size", d.moe_inter},
        {"num_hidden_layers", d.layers},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"hidden_act", "silu"},
        {"rms_norm_eps", 1e-5},
        {"rope_theta", 150000.0},
        {"rope_scaling", json::object{{"rope_type", "yarn"},
                                      {"factor", 32.0},
                                      {"beta_fast", 32.0},
                                      {"beta_slow", 1.0},
                                      {"original_max_position_embeddings", 4096},
                                      {"truncate", false}}},
        {"attention_bias", true},
        {"sliding_window", window},
        {"layer_types", std::move(types)},
        {"num_local_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"experts_per_token", d.top_k},
        {"swiglu_limit", 7.0},
        {"initial_context_length", 4096},
        {"max_position_embeddings", 131072},
        {"tie_word_embeddings", false},
        {"torch_dtype", "bfloat16"},
    };
}

/// The config.json of a Qwen3 (dense), Qwen3-MoE (moe), Qwen3.5 (hybrid), Qwen3-Next (hybrid-moe) or
/// Qwen3.5-MoE (hybrid-moe35) decoder of shape `d`, its embedding tied to the LM head when `tied`
/// (never for the experts).
json::object decoder_config(SynthArch arch, const DecoderSize& d, bool tied) {
    if (arch == SynthArch::GptOss) return gpt_oss_config(d, d.hidden >= 1024 ? 128 : d.hidden / 8);
    if (arch == SynthArch::Dense)
        return json::object{
            {"architectures", json::array{"Qwen3ForCausalLM"}},
            {"model_type", "qwen3"},
            {"vocab_size", d.vocab},
            {"hidden_size", d.hidden},
            {"intermediate_size", d.intermediate},
            {"num_hidden_layers", d.layers},
            {"num_attention_heads", d.heads},
            {"num_key_value_heads", d.kv_heads},
            {"head_dim", d.head_dim},
            {"hidden_act", "silu"},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 1000000.0},
            {"attention_bias", false},
            {"use_sliding_window", false},
            {"max_position_embeddings", 40960},
            {"tie_word_embeddings", tied},
            {"torch_dtype", "bfloat16"},
        };
    if (arch == SynthArch::Moe) {
        // Qwen3's fields and Qwen3MoeConfig's expert fields, untied like Qwen3-30B-A3B.
        json::object c = decoder_config(SynthArch::Dense, d, false);
        c["architectures"] = json::array{"Qwen3MoeForCausalLM"};
        c["model_type"] = "qwen3_moe";
        add_experts(c, d);
        return c;
    }
    json::object text{
        {"vocab_size", d.vocab},
        {"hidden_size", d.hidden},
        {"intermediate_size", d.intermediate},
        {"num_hidden_layers", d.layers},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"hidden_act", "silu"},
        {"rms_norm_eps", 1e-6},
        {"linear_num_key_heads", d.nk},
        {"linear_num_value_heads", d.nv},
        {"linear_key_head_dim", d.dk},
        {"linear_value_head_dim", d.dv},
        {"linear_conv_kernel_dim", 4},
        {"full_attention_interval", 4},
        {"max_position_embeddings", 262144},
    };
    if (arch == SynthArch::Hybrid || arch == SynthArch::HybridMoe35) {
        const bool moe = arch == SynthArch::HybridMoe35;
        json::object rope{
            {"rope_type", "default"}, {"rope_theta", 10000000.0}, {"partial_rotary_factor", 0.25}};
        if (d.head_dim / 4 == 64) {
            rope["mrope_section"] = json::array{11, 11, 10};
            rope["mrope_interleaved"] = true;
        }
        text["model_type"] = moe ? "qwen3_5_moe_text" : "qwen3_5_text";
        text["layer_types"] = layer_types(d.layers);
        if (moe) {
            // Qwen3_5MoeTextConfig: no dense MLP, no norm_topk_prob (always renormalised), every layer
            // sparse.
            text.erase("intermediate_size");
            text["num_experts"] = d.experts;
            text["num_experts_per_tok"] = d.top_k;
            text["moe_intermediate_size"] = d.moe_inter;
            text["shared_expert_intermediate_size"] = d.shared_inter;
            tied = false;
        }
        text["rope_parameters"] = std::move(rope);
        text["attn_output_gate"] = true;
        text["tie_word_embeddings"] = tied;
        text["dtype"] = "bfloat16";
        return json::object{
            {"architectures",
             json::array{moe ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration"}},
            {"model_type", moe ? "qwen3_5_moe" : "qwen3_5"},
            {"tie_word_embeddings", tied},
            {"text_config", std::move(text)},
        };
    }
    json::object c = std::move(text);
    c["architectures"] = json::array{"Qwen3NextForCausalLM"};
    c["model_type"] = "qwen3_next";
    c["rope_theta"] = 10000000.0;
    c["partial_rotary_factor"] = 0.25;
    add_experts(c, d);
    c["tie_word_embeddings"] = false;
    c["torch_dtype"] = "bfloat16";
    return c;
}

} // namespace

std::optional<SynthArch> parse_synth_arch(std::string_view s) {
    for (std::size_t i = 0; i < arch_names.size(); ++i)
        if (arch_names[i] == s) return static_cast<SynthArch>(i);
    return std::nullopt;
}

std::optional<SynthSize> parse_synth_size(std::string_view s) {
    for (std::size_t i = 0; i < size_names.size(); ++i)
        if (size_names[i] == s) return static_cast<SynthSize>(i);
    return std::nullopt;
}

std::string_view name(SynthArch a) {
    return arch_names[static_cast<std::size_t>(a)];
}
std::string_view name(SynthSize s) {
    return size_names[static_cast<std::size_t>(s)];
}

json::object synth_config(SynthArch arch, SynthSize size) {
    if (arch == SynthArch::Windowed || arch == SynthArch::Softcap || arch == SynthArch::Mla)
        return variant_config(arch, size);
    if (arch == SynthArch::Encoder) {
        const auto e = encoder_size(size);
        return json::object{
            {"architectures", json::array{"ModernBertForMaskedLM"}},
            {"model_type", "modernbert"},
            {"vocab_size", e.vocab},
            {"hidden_size", e.hidden},
            {"intermediate_size", e.intermediate},
            {"num_hidden_layers", e.layers},
            {"num_attention_heads", e.heads},
            {"norm_eps", 1e-5},
            {"norm_bias", false},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"hidden_activation", "gelu"},
            {"global_attn_every_n_layers", 3},
            {"local_attention", e.local},
            {"global_rope_theta", 160000.0},
            {"local_rope_theta", 10000.0},
            {"max_position_embeddings", 8192},
            {"pad_token_id", 0},
            {"num_question_types", e.question_types},
        };
    }
    return decoder_config(arch, decoder_size(arch, size), true);
}

namespace {

constexpr std::array<std::string_view, 12> published_names{"1.7b",    "4b",        "8b",        "14b",
                                                           "32b",     "30b-a3b",   "235b-a22b", "80b-a3b",
                                                           "35b-a3b", "122b-a10b", "20b",       "120b"};

/// The architecture whose published model `size` is (the expert sizes; nothing for the dense
/// sizes, which dense and hybrid share).
std::optional<SynthArch> expert_arch(PublishedSize size) {
    switch (size) {
    case PublishedSize::A3B30:
    case PublishedSize::A22B235:
        return SynthArch::Moe;
    case PublishedSize::A3B80:
        return SynthArch::HybridMoe;
    case PublishedSize::A3B35:
    case PublishedSize::A10B122:
        return SynthArch::HybridMoe35;
    case PublishedSize::Oss20:
    case PublishedSize::Oss120:
        return SynthArch::GptOss;
    default:
        return std::nullopt;
    }
}

} // namespace

std::optional<PublishedSize> parse_published_size(std::string_view s) {
    for (std::size_t i = 0; i < published_names.size(); ++i)
        if (published_names[i] == s) return static_cast<PublishedSize>(i);
    return std::nullopt;
}

std::string_view name(PublishedSize s) {
    return published_names[static_cast<std::size_t>(s)];
}

Published published_model(SynthArch arch, PublishedSize size) {
    const auto i = static_cast<std::size_t>(size);
    if (auto want = expert_arch(size)) {
        if (*want != arch)
            throw Error(
                fmt::format("make-model --arch {} --size {}: {} is a published model of --arch {}, not {}",
                            name(arch), name(size), name(size), name(*want), name(arch)));
        // Published config.json: vocab, hidden, layers, heads, kv heads, head_dim, dense intermediate;
        // Gated-DeltaNet key/value heads and dims; experts, top-k, expert and shared intermediate.
        struct ExpertRow {
            PublishedSize size;
            std::string_view name;
            DecoderSize d;
        };
        static const std::array<ExpertRow, 7> t{{
            // openai/gpt-oss-20b and -120b config.json: 2880 wide, 64 heads of 64, 8 kv heads, experts
            // of 2880, 4 a token; 24 layers of 32 experts, 36 layers of 128.
            {PublishedSize::Oss20,
             "openai/gpt-oss-20b",
             {201088, 2880, 24, 64, 8, 64, 0, 0, 0, 0, 0, 32, 4, 2880, 0}},
            {PublishedSize::Oss120,
             "openai/gpt-oss-120b",
             {201088, 2880, 36, 64, 8, 64, 0, 0, 0, 0, 0, 128, 4, 2880, 0}},
            {PublishedSize::A3B30,
             "Qwen/Qwen3-30B-A3B",
             {151936, 2048, 48, 32, 4, 128, 6144, 0, 0, 0, 0, 128, 8, 768, 0}},
            {PublishedSize::A22B235,
             "Qwen/Qwen3-235B-A22B",
             {151936, 4096, 94, 64, 4, 128, 12288, 0, 0, 0, 0, 128, 8, 1536, 0}},
            {PublishedSize::A3B80,
             "Qwen/Qwen3-Next-80B-A3B-Instruct",
             {151936, 2048, 48, 16, 2, 256, 5120, 16, 32, 128, 128, 512, 10, 512, 512}},
            {PublishedSize::A3B35,
             "Qwen/Qwen3.5-35B-A3B",
             {248320, 2048, 40, 16, 2, 256, 0, 16, 32, 128, 128, 256, 8, 512, 512}},
            {PublishedSize::A10B122,
             "Qwen/Qwen3.5-122B-A10B",
             {248320, 3072, 48, 32, 2, 256, 0, 16, 64, 128, 128, 256, 8, 1024, 1024}},
        }};
        for (const auto& r : t)
            if (r.size == size) return Published{std::string(r.name), decoder_config(arch, r.d, false)};
    }
    struct Row {
        std::string_view name;
        DecoderSize d;
        bool tied;
    };
    if (arch == SynthArch::Dense) {
        // Qwen/Qwen3-*/config.json: vocab, hidden, layers, heads, kv heads, head_dim, intermediate.
        static const std::array<Row, 5> t{{
            {"Qwen/Qwen3-1.7B", {151936, 2048, 28, 16, 8, 128, 6144}, true},
            {"Qwen/Qwen3-4B", {151936, 2560, 36, 32, 8, 128, 9728}, true},
            {"Qwen/Qwen3-8B", {151936, 4096, 36, 32, 8, 128, 12288}, false},
            {"Qwen/Qwen3-14B", {151936, 5120, 40, 40, 8, 128, 17408}, false},
            {"Qwen/Qwen3-32B", {151936, 5120, 64, 64, 8, 128, 25600}, false},
        }};
        return Published{std::string(t[i].name), decoder_config(arch, t[i].d, t[i].tied)};
    }
    if (arch == SynthArch::Hybrid) {
        // Qwen/Qwen3.5-*/config.json text_config; Gated-DeltaNet 16 key heads, dk = dv = 128.
        static const std::array<std::optional<Row>, 5> t{{
            std::nullopt,
            Row{"Qwen/Qwen3.5-4B", {248320, 2560, 32, 16, 4, 256, 9216, 16, 32, 128, 128}, true},
            Row{"Qwen/Qwen3.5-9B", {248320, 4096, 32, 16, 4, 256, 12288, 16, 32, 128, 128}, false},
            std::nullopt,
            Row{"Qwen/Qwen3.5-27B", {248320, 5120, 64, 24, 4, 256, 17408, 16, 48, 128, 128}, false},
        }};
        if (!t[i])
            throw Error(
                fmt::format("make-model --arch hybrid --size {}: no Qwen3.5 of about {} is published (the "
                            "dense hybrids are 0.8B, 2B, 4B, 9B and 27B): --size 4b (Qwen3.5-4B), 8b "
                            "(Qwen3.5-9B) or 32b (Qwen3.5-27B)",
                            name(size), name(size)));
        return Published{std::string(t[i]->name), decoder_config(arch, t[i]->d, t[i]->tied)};
    }
    throw Error(fmt::format(
        "make-model --arch {} --size {}: published dense shapes are written for --arch dense (Qwen3) and "
        "hybrid (Qwen3.5), not {} (its published sizes: moe 30b-a3b, 235b-a22b; hybrid-moe 80b-a3b; "
        "hybrid-moe35 35b-a3b, 122b-a10b; gpt-oss 20b, 120b)",
        name(arch), name(size), name(arch)));
}

void write_config_only(const boost::json::object& config, const std::filesystem::path& dir, bool replace) {
    namespace fs = std::filesystem;
    parse_config(config, (dir / "config.json").string()); // what the recognisers accept, or an error
    if (fs::exists(dir) && !replace)
        throw Error(fmt::format("{}: already exists (pass --force to replace it)", dir.string()));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(fmt::format("{}: cannot create the directory: {}", dir.string(), ec.message()));
    io::write_file_atomically(dir / "config.json", json::serialize(config) + "\n");
}

double synth_value(const TensorSpec& t, std::uint64_t seed, std::size_t i) {
    return TensorValues(t, tensor_key(t.name, seed))(i);
}

namespace {

/// Removes `parent/.NAME.tmpPID` folders of make-model runs of `name` that were killed before they
/// could remove their own (a full 8B's is 8.5 GB): those whose process is gone. A live process's
/// folder (another make-model writing now) is left alone.
void remove_stale_temporaries(const std::filesystem::path& parent, const std::string& name) {
    const std::string prefix = "." + name + ".tmp";
    std::error_code ec;
    for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string entry = it->path().filename().string();
        if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string digits = entry.substr(prefix.size());
        if (digits.size() > 9 ||
            !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        const auto pid = static_cast<pid_t>(std::stol(digits));
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue; // alive, or not ours
        std::error_code gone;
        std::filesystem::remove_all(it->path(), gone);
    }
}

} // namespace

SynthResult make_model(const SynthOptions& o, const std::filesystem::path& dir) {
    return write_synthetic(synth_config(o.arch, o.size), o, dir);
}

SynthResult write_synthetic(const boost::json::object& config, const SynthOptions& o,
                            const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    if (o.dtype != Dtype::BF16 && o.dtype != Dtype::F32)
        throw Error(fmt::format("make-model writes bf16 or f32, not {}", name(o.dtype)));
    if (o.shards == 0) throw Error("make-model: --shards must be at least 1");
    if (fs::exists(dir) && !o.replace)
        throw Error(fmt::format("{}: already exists (pass --force to replace it)", dir.string()));

    const std::string config_text = json::serialize(config);
    SynthResult r;
    r.spec = parse_config(config, (dir / "config.json").string());
    const std::vector<TensorSpec> specs = expected_tensors(r.spec);
    if (o.shards > specs.size())
        throw Error(fmt::format("make-model: {} shards for {} tensors", o.shards, specs.size()));

    // Shards of about equal bytes, tensors in module order.
    std::size_t total = 0;
    for (auto& t : specs) {
        std::size_t n = 1;
        for (auto d : t.shape)
            n *= d;
        total += n * size_of(o.dtype);
        r.parameters += n;
    }
    r.bytes = total;
    std::vector<std::vector<std::size_t>> shards(o.shards);
    {
        std::size_t at = 0, shard = 0;
        for (std::size_t i = 0; i < specs.size(); ++i) {
            std::size_t n = size_of(o.dtype);
            for (auto d : specs[i].shape)
                n *= d;
            const std::size_t left = specs.size() - i;
            if (shard + 1 < o.shards && !shards[shard].empty() &&
                (at >= total * (shard + 1) / o.shards || left <= o.shards - 1 - shard))
                ++shard;
            shards[shard].push_back(i);
            at += n;
        }
    }

    const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
    remove_stale_temporaries(parent, dir.filename().string());
    const fs::path temp = parent / fmt::format(".{}.tmp{}", dir.filename().string(), ::getpid());
    std::error_code ec;
    fs::remove_all(temp, ec);
    if (!fs::create_directories(temp, ec) || ec)
        throw Error(fmt::format("{}: cannot create the output directory: {}", temp.string(),
                                ec ? ec.message() : "it exists"));
    try {
        io::write_file_atomically(temp / "config.json", config_text + "\n");
        std::vector<TensorValues> values;
        for (auto& t : specs)
            values.emplace_back(t, tensor_key(t.name, o.seed));
        json::object weight_map;
        const std::map<std::string, std::string> metadata{
            {"format", "pt"},
            {"cardsim", fmt::format("make-model --arch {} --size {} --seed {} --dtype {}", name(o.arch),
                                    name(o.size), o.seed, o.dtype == Dtype::BF16 ? "bf16" : "f32")}};
        for (std::size_t s = 0; s < o.shards; ++s) {
            const std::string file = o.shards == 1
                                         ? std::string("model.safetensors")
                                         : fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, o.shards);
            std::vector<TensorToWrite> tensors;
            for (auto i : shards[s]) {
                tensors.push_back({specs[i].name, o.dtype, specs[i].shape});
                weight_map[specs[i].name] = file;
            }
            SafetensorsPlan plan(std::move(tensors), metadata);
            const auto& ids = shards[s];
            write_safetensors(
                temp / file, plan,
                [&](std::size_t t, std::size_t first, std::size_t count, std::span<std::byte> out) {
                    const TensorValues& value = values[ids[t]];
                    if (o.dtype == Dtype::BF16) {
                        for (std::size_t j = 0; j < count; ++j) {
                            const std::uint16_t b = float_to_bf16(static_cast<float>(value(first + j)));
                            std::memcpy(out.data() + 2 * j, &b, 2);
                        }
                    } else {
                        for (std::size_t j = 0; j < count; ++j) {
                            const float f = static_cast<float>(value(first + j));
                            std::memcpy(out.data() + 4 * j, &f, 4);
                        }
                    }
                },
                o.threads);
            r.files.push_back(dir / file);
        }
        if (o.shards > 1) {
            json::object index{{"metadata", json::object{{"total_size", total}}},
                               {"weight_map", std::move(weight_map)}};
            io::write_file_atomically(temp / "model.safetensors.index.json", json::serialize(index) + "\n");
        }
        if (fs::exists(dir)) {
            const fs::path old = parent / fmt::format(".{}.old{}", dir.filename().string(), ::getpid());
            fs::rename(dir, old);
            fs::rename(temp, dir);
            fs::remove_all(old);
        } else {
            fs::rename(temp, dir);
        }
    } catch (const fs::filesystem_error& e) {
        fs::remove_all(temp, ec);
        throw Error(fmt::format("{}: cannot write the checkpoint: {}", dir.string(), e.what()));
    } catch (...) {
        fs::remove_all(temp, ec);
        throw;
    }
    return r;
}

} // namespace cardsim::models
