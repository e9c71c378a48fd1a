// The decoder recognisers: qwen3, qwen2, llama (dense), qwen3_moe and gpt_oss (experts) and qwen3_next,
// qwen3_5, qwen3_5_moe (hybrid), following the config classes of transformers (`configuration_<type>.py`) for
// field names and defaults.

#include "models/config_reader.hpp"
#include "models/recognise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cardsim::models {
namespace {

/// A number that may be given in two places (`rope_parameters.rope_theta` and `rope_theta`): the
/// one present, an error when both are present and differ, else `fallback`.
double one_number(const std::optional<ConfigReader>& a, std::string_view ka, const ConfigReader& b,
                  std::string_view kb, double fallback) {
    std::optional<double> x = a ? a->opt_number(ka) : std::nullopt;
    std::optional<double> y = b.opt_number(kb);
    if (x && y && *x != *y)
        b.fail(kb, fmt::format("is {} but `{}` is {}: contradictory", *y, a->field(ka), *x));
    return x ? *x : y ? *y : fallback;
}

/// The rope type named in `reader` (`rope_type`, or `type` in old `rope_scaling`), if any.
std::optional<std::string> rope_type(const ConfigReader& reader) {
    if (auto t = reader.opt_string("rope_type")) return t;
    return reader.opt_string("type");
}

bool is_hybrid(DecoderFamily f) {
    return f == DecoderFamily::Qwen3Next || f == DecoderFamily::Qwen3_5 || f == DecoderFamily::Qwen3_5Moe;
}

/// Whether `f` keeps Qwen3.5's layout (flat `in_proj_qkv`, the full model's fields in `text_config`).
bool is_qwen3_5(DecoderFamily f) {
    return f == DecoderFamily::Qwen3_5 || f == DecoderFamily::Qwen3_5Moe;
}

bool is_deepseek(DecoderFamily f) {
    return f == DecoderFamily::DeepseekV2 || f == DecoderFamily::DeepseekV3;
}

/// An optional number whose transformers default applies only when the field is absent: an explicit
/// null means none (`attn_logit_softcapping: null`).
std::optional<double> defaulted(const ConfigReader& c, std::string_view key, double fallback) {
    if (!c.present(key)) return fallback;
    return c.opt_positive_number(key);
}

/// A count defaulted the same way (`sliding_window`, `q_lora_rank`).
std::optional<std::size_t> defaulted_count(const ConfigReader& c, std::string_view key,
                                           std::size_t fallback) {
    if (!c.present(key)) return fallback;
    return c.opt_positive(key);
}

/// DeepSeek's multi-head latent attention fields (`configuration_deepseek_v3.py` defaults; V2's are
/// the same for these). Every layer is latent attention with a dense MLP.
void parse_latent(const ConfigReader& c, DecoderSpec& d) {
    LatentShape m;
    m.q_rank = defaulted_count(c, "q_lora_rank", 1536).value_or(0);
    m.kv_rank = c.opt_positive("kv_lora_rank").value_or(512);
    m.nope = c.opt_positive("qk_nope_head_dim").value_or(128);
    m.rope = c.opt_positive("qk_rope_head_dim").value_or(64);
    m.value = c.opt_positive("v_head_dim").value_or(128);
    if (m.rope % 2 != 0) c.fail("qk_rope_head_dim", fmt::format("is {}; a rotary dim must be even", m.rope));
    auto& a = d.attention;
    a.head_dim = m.qk_dim();
    a.rotary_dim = m.rope;
    a.scale = 1.0 / std::sqrt(static_cast<double>(m.qk_dim()));
    // V2 rotates complex pairs (view_as_complex); V3 does when rope_interleave (the default).
    a.interleaved = d.family == DecoderFamily::DeepseekV2 || c.opt_bool("rope_interleave").value_or(true);
    if (c.opt_bool("attention_bias").value_or(false))
        c.fail("attention_bias", "is true; cardsim builds the latent attention without biases");
    // Layers from first_k_dense_replace on route to experts (DeepseekV2DecoderLayer): grouped,
    // scaled (and for V3 sigmoid, bias-corrected) top-k routing that the Moe op does not express.
    const std::size_t layers = d.layers.size();
    const std::size_t dense =
        c.opt_count("first_k_dense_replace").value_or(d.family == DecoderFamily::DeepseekV3 ? 3 : 0);
    if (dense < layers)
        c.fail("first_k_dense_replace",
               fmt::format("is {}, so layers {}..{} route to experts; cardsim has no graph op for "
                           "DeepSeek's router yet and builds deepseek checkpoints whose every layer is dense "
                           "(first_k_dense_replace ≥ num_hidden_layers = {})",
                           dense, dense, layers - 1, layers));
    for (auto& l : d.layers)
        l.mixer = Mixer::LatentAttention;
    d.latent = m;
}

/// Windows of `window` on the `sliding_attention` layers of `types`, or on the even layers without
/// it (Gemma2Config's and GptOssConfig's default); another layer type is refused naming it.
void alternate_windows(const ConfigReader& c, DecoderSpec& d,
                       const std::optional<std::vector<std::string>>& types,
                       std::optional<std::size_t> window) {
    for (std::size_t i = 0; i < d.layers.size(); ++i) {
        bool sliding = i % 2 == 0;
        if (types) {
            const auto& t = (*types)[i];
            if (t != "full_attention" && t != "sliding_attention")
                c.fail("layer_types",
                       fmt::format("has `{}` for layer {} (expected full_attention or sliding_attention)", t,
                                   i));
            sliding = t == "sliding_attention";
        }
        if (sliding) d.layers[i].window = window;
    }
}

/// Gemma-2's fields (`configuration_gemma2.py`): soft caps, the score scale, the scaled embedding,
/// GeGLU, four norms a layer, and sliding windows on the `sliding_attention` layers (by default the
/// even ones).
void parse_gemma2(const ConfigReader& c, DecoderSpec& d,
                  const std::optional<std::vector<std::string>>& types) {
    auto& a = d.attention;
    a.scale = 1.0 / std::sqrt(c.opt_positive_number("query_pre_attn_scalar").value_or(256.0));
    a.softcap = defaulted(c, "attn_logit_softcapping", 50.0);
    d.final_softcap = defaulted(c, "final_logit_softcapping", 30.0);
    d.embed_scale = std::sqrt(static_cast<double>(d.hidden));
    d.sandwich_norms = true;
    const std::string act = c.opt_string("hidden_activation").value_or("gelu_pytorch_tanh");
    if (act == "gelu_pytorch_tanh" || act == "gelu_new")
        d.activation = Activation::GeluTanh;
    else if (act == "gelu")
        d.activation = Activation::Gelu;
    else
        c.fail("hidden_activation",
               fmt::format("is `{}`; the gemma2 MLP is built with gelu_pytorch_tanh, gelu_new or gelu", act));
    if (c.opt_bool("use_bidirectional_attention").value_or(false))
        c.fail("use_bidirectional_attention", "is true; cardsim builds causal decoders only");
    alternate_windows(c, d, types, defaulted_count(c, "sliding_window", 4096));
}

/// Qwen3_5MoeTextConfig's experts: 256, top 8 of 512 wide, a shared expert of 512 under its sigmoid
/// gate, in every layer, stored fused. Its router (Qwen3VLMoeTextTopKRouter) always renormalises
/// the top k, and the config has no `norm_topk_prob`, `decoder_sparse_step` or `mlp_only_layers`:
/// a value that would make a layer dense or leave the top k unnormalised is refused naming it.
void parse_qwen3_5_experts(const ConfigReader& c, DecoderSpec& d) {
    MoeShape m;
    m.experts = c.opt_count("num_experts").value_or(256);
    if (m.experts == 0)
        c.fail("num_experts", "is 0; every qwen3_5_moe layer routes to experts (it has no dense MLP)");
    if (m.experts > MAX_EXPERTS)
        c.fail("num_experts", fmt::format("is {}, more than the {} cardsim reads", m.experts, MAX_EXPERTS));
    m.top_k = c.opt_positive("num_experts_per_tok").value_or(8);
    if (m.top_k > m.experts)
        c.fail("num_experts_per_tok", fmt::format("is {}, more than num_experts = {}", m.top_k, m.experts));
    m.intermediate = c.opt_positive("moe_intermediate_size").value_or(512);
    m.shared_intermediate = c.opt_count("shared_expert_intermediate_size").value_or(512);
    if (!c.opt_bool("norm_topk_prob").value_or(true))
        c.fail("norm_topk_prob", "is false; the qwen3_5_moe router always renormalises its top k");
    if (c.opt_positive("decoder_sparse_step").value_or(1) != 1)
        c.fail("decoder_sparse_step", "is not 1; every qwen3_5_moe layer routes to experts");
    if (!c.opt_counts("mlp_only_layers").value_or(std::vector<std::size_t>{}).empty())
        c.fail("mlp_only_layers", "names layers; every qwen3_5_moe layer routes to experts");
    m.norm_topk_prob = true;
    m.fused = true;
    for (auto& l : d.layers)
        l.moe = true;
    d.moe = m;
}

/// YaRN's fields (transformers' `_compute_yarn_parameters` defaults): `factor` (required, > 1),
/// `beta_fast` 32, `beta_slow` 1, `original_max_position_embeddings`, `truncate` true and
/// `attention_factor` (0.1 · ln(factor) + 1 when absent).
Yarn parse_yarn(const ConfigReader& r) {
    Yarn y;
    y.factor = r.opt_positive_number("factor").value_or(0);
    if (!(y.factor >= 1)) r.fail("factor", "must be a number of at least 1 for YaRN");
    y.beta_fast = r.opt_positive_number("beta_fast").value_or(32);
    y.beta_slow = r.opt_positive_number("beta_slow").value_or(1);
    if (!(y.beta_fast > y.beta_slow))
        r.fail("beta_fast", fmt::format("is {}, not above beta_slow = {}", y.beta_fast, y.beta_slow));
    y.original_max = r.opt_positive("original_max_position_embeddings").value_or(4096);
    y.truncate = r.opt_bool("truncate").value_or(true);
    y.attention_factor = r.opt_positive_number("attention_factor").value_or(0.1 * std::log(y.factor) + 1.0);
    return y;
}

/// GptOssConfig: layers alternate a sliding window of `sliding_window` (128) and full attention
/// (`layer_types`, by default sliding on even layers), every attention has sinks and biases, and
/// every layer's MLP is `num_local_experts` (32) experts of `intermediate_size` (2880), the top
/// `num_experts_per_tok` (4) chosen from the biased router's logits and weighted by a softmax over
/// them, each a clamped SwiGLU (`swiglu_limit` 7, alpha 1.702 in GptOssExperts) with biases.
void parse_gpt_oss(const ConfigReader& c, DecoderSpec& d,
                   const std::optional<std::vector<std::string>>& types) {
    alternate_windows(c, d, types, defaulted_count(c, "sliding_window", 128));
    for (auto& l : d.layers)
        l.moe = true;
    d.attention.sinks = true;
    MoeShape m;
    m.experts = c.opt_positive("num_local_experts").value_or(32);
    if (m.experts > MAX_EXPERTS)
        c.fail("num_local_experts",
               fmt::format("is {}, more than the {} cardsim reads", m.experts, MAX_EXPERTS));
    m.top_k = c.opt_positive("num_experts_per_tok").value_or(4);
    if (m.top_k > m.experts)
        c.fail("num_experts_per_tok",
               fmt::format("is {}, more than num_local_experts = {}", m.top_k, m.experts));
    m.intermediate = c.positive("intermediate_size");
    m.norm_topk_prob = true; // a softmax over the k chosen logits
    m.transposed = true;
    m.router_bias = true;
    m.expert_bias = true;
    m.swiglu_limit = c.opt_positive_number("swiglu_limit").value_or(7.0);
    d.moe = m;
}

} // namespace

DecoderSpec parse_decoder(const ConfigReader& top, DecoderFamily family, const std::string& model_type) {
    DecoderSpec d;
    d.family = family;
    d.model_type = model_type;
    const bool full_model = model_type == "qwen3_5" || model_type == "qwen3_5_moe";
    d.prefix = full_model ? "model.language_model." : "model.";
    const bool deepseek = is_deepseek(family), gemma = family == DecoderFamily::Gemma2;

    // Qwen3.5's full model nests the language model's fields under `text_config`.
    std::optional<ConfigReader> nested = top.sub("text_config");
    if (full_model && !nested)
        top.fail("text_config",
                 fmt::format("is missing (a {} model keeps its language model's fields there)", model_type));
    const ConfigReader& c = is_qwen3_5(family) && nested ? *nested : top;

    d.vocab = c.positive("vocab_size");
    d.hidden = c.positive("hidden_size");
    // Qwen3_5MoeTextConfig has no dense MLP (every layer routes to experts): no intermediate_size.
    // gpt_oss's intermediate_size is each expert's (parse_gpt_oss): it has no dense MLP either.
    d.intermediate = family == DecoderFamily::Qwen3_5Moe ? c.opt_positive("intermediate_size").value_or(0)
                     : family == DecoderFamily::GptOss   ? 0
                                                         : c.positive("intermediate_size");
    const std::size_t layers = c.positive("num_hidden_layers");
    if (layers > MAX_LAYERS)
        c.fail("num_hidden_layers", fmt::format("is {}, more than the {} cardsim reads", layers, MAX_LAYERS));
    auto& a = d.attention;
    a.heads = c.positive("num_attention_heads");
    // MistralConfig's num_key_value_heads is 8 when absent (the number of heads when null).
    a.kv_heads = family == DecoderFamily::Mistral && !c.present("num_key_value_heads")
                     ? 8
                     : c.opt_positive("num_key_value_heads").value_or(a.heads);
    if (deepseek) {
        // head_dim in a DeepSeek config is the rotary part; parse_latent sets the shapes.
    } else if (gemma) {
        a.head_dim = c.opt_positive("head_dim").value_or(256);
    } else if (auto hd = c.opt_positive("head_dim")) {
        a.head_dim = *hd;
    } else {
        if (d.hidden % a.heads != 0)
            c.fail("hidden_size",
                   fmt::format("is {}, not divisible by num_attention_heads = {} (and no head_dim "
                               "is given)",
                               d.hidden, a.heads));
        a.head_dim = d.hidden / a.heads;
    }
    if (a.heads % a.kv_heads != 0)
        c.fail("num_key_value_heads",
               fmt::format("is {}, which does not divide num_attention_heads = {}", a.kv_heads, a.heads));
    if (auto act = c.opt_string("hidden_act"); !gemma && act && *act != "silu")
        c.fail("hidden_act", fmt::format("is `{}`; the {} MLP is built with SiLU only", *act, model_type));
    d.eps = c.opt_positive_number("rms_norm_eps").value_or(1e-6);

    // Tied embeddings: Qwen3.5 may say it at the top and in text_config; they must agree.
    auto tied_inner = c.opt_bool("tie_word_embeddings");
    auto tied_outer = &c != &top ? top.opt_bool("tie_word_embeddings") : std::nullopt;
    if (tied_inner && tied_outer && *tied_inner != *tied_outer)
        c.fail("tie_word_embeddings",
               fmt::format("is {} but the top-level tie_word_embeddings is {}: contradictory", *tied_inner,
                           *tied_outer));
    d.tied = tied_inner.value_or(tied_outer.value_or(gemma)); // Gemma2Config ties by default

    // RoPE: `rope_parameters` (transformers ≥ 4.57) or the older top-level fields.
    const auto rp = c.sub("rope_parameters");
    const auto rs = c.sub("rope_scaling");
    for (const auto* r : {rp ? &*rp : nullptr, rs ? &*rs : nullptr})
        if (r)
            if (auto t = rope_type(*r); t && *t != "default") {
                if (*t == "yarn" && family == DecoderFamily::GptOss) {
                    a.yarn = parse_yarn(*r);
                    continue;
                }
                r->fail(r->has("rope_type") ? "rope_type" : "type",
                        fmt::format("is `{}`; only the default RoPE (one theta){} is built", *t,
                                    family == DecoderFamily::GptOss ? " and gpt_oss's YaRN" : ""));
            }
    a.theta = one_number(rp, "rope_theta", c, "rope_theta", 10000.0);
    if (!(a.theta > 0)) c.fail("rope_theta", "must be positive");
    if (!deepseek) {
        const double partial = one_number(rp, "partial_rotary_factor", c, "partial_rotary_factor",
                                          is_hybrid(family) ? 0.25 : 1.0);
        if (!(partial > 0 && partial <= 1))
            c.fail("partial_rotary_factor", fmt::format("is {} (expected a fraction in (0, 1])", partial));
        a.rotary_dim =
            static_cast<std::size_t>(static_cast<double>(a.head_dim) * partial); // transformers truncates
        if (a.rotary_dim < 2 || a.rotary_dim % 2 != 0)
            c.fail("partial_rotary_factor",
                   fmt::format("gives a rotary dim of {} of head_dim {}; it must be even and at least 2",
                               a.rotary_dim, a.head_dim));
    }

    // Mistral's projections have no biases whatever the config says; DeepSeek's are checked below.
    const bool attention_bias =
        family != DecoderFamily::Mistral && !deepseek &&
        c.opt_bool("attention_bias").value_or(family == DecoderFamily::GptOss); // GptOssConfig: true
    a.qkv_bias = family == DecoderFamily::Qwen2 || attention_bias;
    a.o_bias = family != DecoderFamily::Qwen2 && attention_bias;
    d.mlp_bias = family == DecoderFamily::Llama && c.opt_bool("mlp_bias").value_or(false);
    a.qk_norm = family == DecoderFamily::Qwen3 || family == DecoderFamily::Qwen3Moe || is_hybrid(family);
    d.zero_centred = is_hybrid(family) || gemma;
    a.output_gate = is_hybrid(family) && c.opt_bool("attn_output_gate").value_or(true);

    d.layers.resize(layers);
    const auto layer_types = c.opt_strings("layer_types");
    if (layer_types && layer_types->size() != layers && family != DecoderFamily::Mistral)
        c.fail("layer_types",
               fmt::format("lists {} layers but num_hidden_layers is {}", layer_types->size(), layers));

    if (is_hybrid(family)) {
        DeltaShape g;
        g.key_heads = c.positive("linear_num_key_heads");
        g.value_heads = c.positive("linear_num_value_heads");
        g.key_dim = c.positive("linear_key_head_dim");
        g.value_dim = c.positive("linear_value_head_dim");
        g.kernel = c.opt_positive("linear_conv_kernel_dim").value_or(4);
        g.grouped = family == DecoderFamily::Qwen3Next;
        if (g.value_heads % g.key_heads != 0)
            c.fail("linear_num_value_heads", fmt::format("is {}, not a multiple of linear_num_key_heads = {}",
                                                         g.value_heads, g.key_heads));
        d.delta = g;
        const auto interval = c.opt_positive("full_attention_interval");
        for (std::size_t i = 0; i < layers; ++i) {
            const bool full_by_interval = (i + 1) % interval.value_or(4) == 0;
            bool full = full_by_interval;
            if (layer_types) {
                const auto& t = (*layer_types)[i];
                if (t != "full_attention" && t != "linear_attention")
                    c.fail("layer_types", fmt::format("has `{}` for layer {} (expected full_attention or "
                                                      "linear_attention)",
                                                      t, i));
                full = t == "full_attention";
                if (interval && full != full_by_interval)
                    c.fail("layer_types",
                           fmt::format("makes layer {} {} but full_attention_interval = {} makes it {}: "
                                       "contradictory",
                                       i, t, *interval,
                                       full_by_interval ? "full_attention" : "linear_attention"));
            }
            d.layers[i].mixer = full ? Mixer::Attention : Mixer::GatedDeltaNet;
        }
    } else if (deepseek) {
        parse_latent(c, d);
    } else if (gemma) {
        parse_gemma2(c, d, layer_types);
    } else if (family == DecoderFamily::GptOss) {
        parse_gpt_oss(c, d, layer_types);
    } else if (family == DecoderFamily::Mistral) {
        // Every layer attends within sliding_window (4096 when absent, none when null); MistralConfig
        // ignores layer_types.
        const auto window = defaulted_count(c, "sliding_window", 4096);
        for (auto& l : d.layers)
            l.window = window;
    } else {
        // Sliding-window layers (qwen2, qwen3): only when use_sliding_window is set.
        std::optional<std::size_t> window;
        if (family != DecoderFamily::Llama && c.opt_bool("use_sliding_window").value_or(false)) {
            window = c.opt_positive("sliding_window");
            if (!window) c.fail("sliding_window", "is missing but use_sliding_window is true");
        }
        const std::size_t max_window_layers = c.opt_count("max_window_layers").value_or(28);
        for (std::size_t i = 0; i < layers; ++i) {
            bool sliding = i >= max_window_layers;
            if (layer_types) {
                const auto& t = (*layer_types)[i];
                if (t != "full_attention" && t != "sliding_attention")
                    c.fail("layer_types", fmt::format("has `{}` for layer {} (expected full_attention or "
                                                      "sliding_attention)",
                                                      t, i));
                sliding = t == "sliding_attention";
            }
            if (window && sliding) d.layers[i].window = window;
        }
    }

    if (family == DecoderFamily::Qwen3_5Moe) {
        parse_qwen3_5_experts(c, d);
    } else if (family == DecoderFamily::Qwen3Next || family == DecoderFamily::Qwen3Moe) {
        // Qwen3NextConfig: 512 experts, top 10 of 512 wide, a shared expert of 512, renormalised;
        // Qwen3MoeConfig: 128 experts, top 8 of 768 wide, no shared expert, not renormalised.
        const bool next = family == DecoderFamily::Qwen3Next;
        const std::size_t experts = c.opt_count("num_experts").value_or(next ? 512 : 128);
        if (experts > MAX_EXPERTS)
            c.fail("num_experts", fmt::format("is {}, more than the {} cardsim reads", experts, MAX_EXPERTS));
        if (experts > 0) {
            MoeShape m;
            m.experts = experts;
            m.top_k = c.opt_positive("num_experts_per_tok").value_or(next ? 10 : 8);
            m.intermediate = c.opt_positive("moe_intermediate_size").value_or(next ? 512 : 768);
            if (next) {
                m.shared_intermediate = c.opt_count("shared_expert_intermediate_size").value_or(512);
            } else if (c.opt_count("shared_expert_intermediate_size").value_or(0) > 0) {
                c.fail("shared_expert_intermediate_size",
                       "is not 0; Qwen3MoeSparseMoeBlock has no shared expert (qwen3_next has one)");
            }
            m.norm_topk_prob = c.opt_bool("norm_topk_prob").value_or(next);
            if (m.top_k > m.experts)
                c.fail("num_experts_per_tok",
                       fmt::format("is {}, more than num_experts = {}", m.top_k, m.experts));
            const std::size_t step = c.opt_positive("decoder_sparse_step").value_or(1);
            const auto dense_layers = c.opt_counts("mlp_only_layers").value_or(std::vector<std::size_t>{});
            for (auto l : dense_layers)
                if (l >= layers) c.fail("mlp_only_layers", fmt::format("names layer {} of {}", l, layers));
            for (std::size_t i = 0; i < layers; ++i)
                d.layers[i].moe = (i + 1) % step == 0 && std::find(dense_layers.begin(), dense_layers.end(),
                                                                   i) == dense_layers.end();
            d.moe = m;
        }
    }
    return d;
}

} // namespace cardsim::models
