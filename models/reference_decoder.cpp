// The decoder reference, written from transformers' modeling_qwen3.py, modeling_qwen2.py,
// modeling_llama.py, modeling_mistral.py, modeling_qwen3_moe.py, modeling_qwen3_next.py,
// modeling_qwen3_5.py and modeling_qwen3_5_moe.py: decode one token at a time, KV caches, conv histories and
// Gated-DeltaNet states in double. The structure (which layers are linear attention, biases, QK norms,
// experts) comes from the tensors present; sizes from config.json.

#include "engine/error.hpp"
#include "engine/numerics/rotary.hpp"
#include "models/reference.hpp"
#include "models/reference_decoder_parts.hpp"

#include <fmt/format.h>

#include <cmath>

namespace cardsim::models {

using namespace reference;
using namespace reference::decoder;

struct DecoderReference::Session::Layers {
    std::vector<LayerState> layers;
};

DecoderReference::Session::~Session() = default;
DecoderReference::Session::Session(Session&&) noexcept = default;
DecoderReference::Session& DecoderReference::Session::operator=(Session&&) noexcept = default;

DecoderReference::DecoderReference(const Checkpoint& c) : w_(std::make_unique<Weights>()) {
    Weights& W = *w_;
    const Fields top(c.config(), c.config_path());
    const std::string type = top.text("model_type", "");
    const bool qwen3_5_moe = type == "qwen3_5_moe" || type == "qwen3_5_moe_text";
    const bool hybrid = type == "qwen3_next" || type == "qwen3_5" || type == "qwen3_5_text" || qwen3_5_moe;
    const bool gemma = type == "gemma2", deepseek = type == "deepseek_v2" || type == "deepseek_v3";
    const bool qwen3_moe = type == "qwen3_moe", oss = type == "gpt_oss";
    if (!hybrid && !gemma && !deepseek && !qwen3_moe && !oss && type != "qwen3" && type != "qwen2" &&
        type != "llama" && type != "mistral")
        throw Error(
            fmt::format("{}: the f64 decoder reference does not evaluate model_type `{}` (it evaluates "
                        "qwen3, qwen2, llama, mistral, gemma2, deepseek_v2, deepseek_v3, qwen3_moe, "
                        "qwen3_next, qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text and gpt_oss)",
                        c.config_path(), type));
    const Fields f = top.object("text_config").value_or(top);
    W.vocab = f.count("vocab_size");
    W.hidden = f.count("hidden_size");
    W.heads = f.count("num_attention_heads");
    // MistralConfig: 8 kv heads when the field is absent.
    W.kv_heads =
        f.count("num_key_value_heads", type == "mistral" && !f.present("num_key_value_heads") ? 8 : W.heads);
    W.head_dim = f.count("head_dim", W.hidden / W.heads);
    W.eps = f.number("rms_norm_eps", 1e-6);
    const auto rp = f.object("rope_parameters");
    W.theta = rp && rp->has("rope_theta") ? rp->number("rope_theta") : f.number("rope_theta", 10000.0);
    const double partial = rp && rp->has("partial_rotary_factor")
                               ? rp->number("partial_rotary_factor")
                               : f.number("partial_rotary_factor", hybrid ? 0.25 : 1.0);
    W.rotary_dim = static_cast<std::size_t>(static_cast<double>(W.head_dim) * partial);
    W.zero_centred = hybrid || gemma;
    if (gemma) {
        // Gemma2Config: head_dim 256, query_pre_attn_scalar 256, caps 50 / 30 (null: none).
        W.head_dim = W.rotary_dim = f.count("head_dim", 256);
        W.scaling = 1.0 / std::sqrt(f.number("query_pre_attn_scalar", 256.0));
        if (!f.present("attn_logit_softcapping") || f.has("attn_logit_softcapping"))
            W.attn_softcap = f.number("attn_logit_softcapping", 50.0);
        if (!f.present("final_logit_softcapping") || f.has("final_logit_softcapping"))
            W.final_softcap = f.number("final_logit_softcapping", 30.0);
        W.embed_scale = std::sqrt(static_cast<double>(W.hidden));
        const std::string act = f.text("hidden_activation", "gelu_pytorch_tanh");
        if (act != "gelu" && act != "gelu_pytorch_tanh" && act != "gelu_new")
            throw Error(
                fmt::format("{}: the reference's gemma2 MLP has no activation `{}`", c.config_path(), act));
        W.act = act == "gelu" ? Weights::Act::Gelu : Weights::Act::GeluTanh;
    }
    if (deepseek) {
        W.latent = true;
        W.kv_rank = f.count("kv_lora_rank", 512);
        W.nope = f.count("qk_nope_head_dim", 128);
        W.rope_dim = f.count("qk_rope_head_dim", 64);
        W.v_dim = f.count("v_head_dim", 128);
        W.head_dim = W.nope + W.rope_dim;
        W.scaling = 1.0 / std::sqrt(static_cast<double>(W.head_dim));
        W.rotary = type == "deepseek_v2"             ? Weights::Rotary::Complex
                   : f.flag("rope_interleave", true) ? Weights::Rotary::Deinterleave
                                                     : Weights::Rotary::NeoX;
    }
    const std::size_t L = f.count("num_hidden_layers");
    if (hybrid) {
        W.nk = f.count("linear_num_key_heads");
        W.nv = f.count("linear_num_value_heads");
        W.dk = f.count("linear_key_head_dim");
        W.dv = f.count("linear_value_head_dim");
        W.kernel = f.count("linear_conv_kernel_dim", 4);
        W.top_k = f.count("num_experts_per_tok", qwen3_5_moe ? 8 : 10);
        // Qwen3_5MoeTopKRouter always renormalises (its config has no norm_topk_prob).
        W.norm_topk = qwen3_5_moe || f.flag("norm_topk_prob", true);
    }
    if (qwen3_moe) { // Qwen3MoeConfig: top 8, not renormalised
        W.top_k = f.count("num_experts_per_tok", 8);
        W.norm_topk = f.flag("norm_topk_prob", false);
    }
    if (oss) { // GptOssConfig: top 4, a softmax over the chosen logits, YaRN, clamped SwiGLU
        W.oss = true;
        W.top_k = f.count("num_experts_per_tok", 4);
        W.norm_topk = true;
        W.swiglu_limit = f.number("swiglu_limit", 7.0);
        if (const auto rs = f.object("rope_scaling"); rs && rs->text("rope_type", "") == "yarn") {
            const double factor = rs->number("factor");
            const numerics::Yarn y{factor, rs->number("beta_fast", 32.0), rs->number("beta_slow", 1.0),
                                   rs->count("original_max_position_embeddings", 4096),
                                   rs->flag("truncate", true)};
            W.yarn_freqs = numerics::yarn_frequencies_f64(W.rotary_dim, W.theta, y);
            W.yarn_factor = rs->number("attention_factor", 0.1 * std::log(factor) + 1.0);
        }
    }
    const bool tied = f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", gemma));

    std::string prefix;
    for (std::string p : {"model.language_model.", "model.", ""})
        if (has(c, p + "embed_tokens.weight")) {
            prefix = p;
            break;
        }
    load_head(c, prefix, tied, W);

    // Sliding windows (qwen2/qwen3 with use_sliding_window).
    std::optional<std::size_t> window;
    if ((type == "qwen2" || type == "qwen3" || qwen3_moe) && f.flag("use_sliding_window", false))
        window = f.count("sliding_window");
    // Mistral: every layer, 4096 when absent, none when null.
    const bool mistral = type == "mistral";
    if ((mistral || gemma) && (f.has("sliding_window") || !f.present("sliding_window")))
        window = f.count("sliding_window", 4096);
    if (oss) window = f.count("sliding_window", 128);
    const auto types = f.texts("layer_types");
    const std::size_t max_window_layers = f.count("max_window_layers", 28);

    for (std::size_t i = 0; i < L; ++i) {
        const std::string p = fmt::format("{}layers.{}.", prefix, i);
        Weights::Layer l;
        l.input_norm = tensor(c, p + "input_layernorm.weight");
        l.post_norm = tensor(c, p + "post_attention_layernorm.weight");
        if (has(c, p + "pre_feedforward_layernorm.weight")) {
            l.pre_ff_norm = tensor(c, p + "pre_feedforward_layernorm.weight");
            l.post_ff_norm = tensor(c, p + "post_feedforward_layernorm.weight");
        }
        l.linear = has(c, p + "linear_attn.out_proj.weight");
        if (l.linear) {
            load_deltanet(c, p, l);
        } else if (W.latent) {
            load_latent_attention(c, p, l);
        } else {
            load_attention(c, p, l);
            // Gemma-2 without layer_types: the even layers slide.
            const bool sliding = mistral || (types          ? (*types)[i] == "sliding_attention"
                                             : gemma || oss ? i % 2 == 0
                                                            : i >= max_window_layers);
            if (window && sliding) l.window = window;
        }
        if (oss)
            load_oss_experts(c, p, f.count("num_local_experts", 32), l);
        else if (has(c, p + "mlp.gate.weight"))
            load_experts(c, p, l);
        else
            load_mlp(c, p, l);
        W.layers.push_back(std::move(l));
    }
}

DecoderReference::~DecoderReference() = default;
DecoderReference::DecoderReference(DecoderReference&&) noexcept = default;
DecoderReference& DecoderReference::operator=(DecoderReference&&) noexcept = default;

std::size_t DecoderReference::vocab() const {
    return w_->vocab;
}

DecoderReference::Session::Session(const DecoderReference& ref)
    : ref_(&ref), layers_(std::make_unique<Layers>()) {
    const Weights& W = *ref.w_;
    for (const auto& l : W.layers) {
        LayerState s;
        if (l.linear) {
            s.history.assign(W.kernel, Vec(2 * W.nk * W.dk + W.nv * W.dv, 0.0));
            s.S.assign(W.nv * W.dk * W.dv, 0.0);
        }
        layers_->layers.push_back(std::move(s));
    }
}

DecoderReference::Session DecoderReference::start() const {
    return Session(*this);
}

std::vector<double> DecoderReference::Session::feed(std::int64_t token) {
    return feed(std::span(&token, 1), [](std::size_t) { return true; })[0];
}

std::vector<std::vector<double>>
DecoderReference::Session::feed(std::span<const std::int64_t> tokens,
                                const std::function<bool(std::size_t)>& want) {
    const Weights& W = *ref_->w_;
    Rows x;
    for (auto t : tokens)
        x.push_back(embed(W, t));
    const std::size_t pos = length_;
    for (std::size_t i = 0; i < W.layers.size(); ++i) {
        const auto& l = W.layers[i];
        const bool sandwich = !l.pre_ff_norm.empty(); // Gemma2DecoderLayer
        Rows h;
        for (const auto& r : x)
            h.push_back(rms_norm(r, l.input_norm, W.eps, W.zero_centred));
        LayerState& state = layers_->layers[i];
        Rows y = l.linear   ? deltanet(W, l, state, h)
                 : W.latent ? latent_attention(W, l, state, h, pos)
                            : attention(W, l, state, h, pos);
        Rows h2;
        for (std::size_t t = 0; t < x.size(); ++t) {
            if (sandwich) y[t] = rms_norm(y[t], l.post_norm, W.eps, W.zero_centred);
            for (std::size_t c = 0; c < x[t].size(); ++c)
                x[t][c] += y[t][c];
            h2.push_back(rms_norm(x[t], sandwich ? l.pre_ff_norm : l.post_norm, W.eps, W.zero_centred));
        }
        Rows m = l.router.empty() ? mlp(W, l, h2) : W.oss ? oss_experts(W, l, h2) : experts(W, l, h2);
        for (std::size_t t = 0; t < x.size(); ++t) {
            if (sandwich) m[t] = rms_norm(m[t], l.post_ff_norm, W.eps, W.zero_centred);
            for (std::size_t c = 0; c < x[t].size(); ++c)
                x[t][c] += m[t][c];
        }
    }
    length_ += tokens.size();
    Rows last;
    std::vector<std::size_t> which;
    for (std::size_t t = 0; t < x.size(); ++t)
        if (want(t)) {
            last.push_back(std::move(x[t]));
            which.push_back(t);
        }
    Rows z = logits(W, last);
    std::vector<std::vector<double>> out(tokens.size());
    for (std::size_t k = 0; k < which.size(); ++k)
        out[which[k]] = std::move(z[k]);
    return out;
}

std::vector<std::vector<double>> DecoderReference::prompt_logits(std::span<const std::int64_t> prompt) const {
    Session s = start();
    std::vector<std::vector<double>> out;
    for (auto t : prompt)
        out.push_back(s.feed(t));
    return out;
}

DecoderReference::Greedy DecoderReference::greedy(std::span<const std::int64_t> prompt,
                                                  std::size_t steps) const {
    if (prompt.empty()) throw Error("greedy decoding needs a prompt of at least one token");
    Session s = start();
    Vec logits = std::move(s.feed(prompt, [&](std::size_t t) { return t + 1 == prompt.size(); }).back());
    Greedy g;
    for (std::size_t i = 0; i < steps; ++i) {
        const auto next =
            static_cast<std::int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        g.tokens.push_back(next);
        g.logits.push_back(logits);
        if (i + 1 < steps) logits = s.feed(next);
    }
    return g;
}

} // namespace cardsim::models
