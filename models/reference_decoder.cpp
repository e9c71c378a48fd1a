// The decoder reference, written from transformers' modeling_qwen3.py, modeling_qwen2.py,
// modeling_llama.py, modeling_mistral.py, modeling_qwen3_next.py and modeling_qwen3_5.py: decode one token at
// a time, KV caches, conv histories and Gated-DeltaNet states in double. The structure (which layers are
// linear attention, biases, QK norms, experts) comes from the tensors present; sizes from config.json.

#include "engine/error.hpp"
#include "models/reference.hpp"
#include "models/reference_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

namespace cardsim::models {

using namespace reference;

struct DecoderReference::Weights {
    struct Layer {
        bool linear = false;               // Gated-DeltaNet
        std::optional<std::size_t> window; // sliding-window attention
        Vec input_norm, post_norm;
        Linear q, k, v, o; // attention
        Vec q_norm, k_norm;
        Linear qkv, z, b, a, qkvz, ba, out; // Gated-DeltaNet
        Vec conv, dt_bias, a_log, norm;     // conv [conv_dim, K]
        Linear gate, up, down;              // dense MLP
        Vec pre_ff_norm, post_ff_norm;      // Gemma-2's sandwich norms
        Linear q_a, q_b, kv_a, kv_b;        // DeepSeek's latent attention (q_a empty: one q)
        Vec q_a_norm, kv_a_norm;
        Linear router; // experts
        std::vector<Linear> eg, eu, ed;
        Linear sg, su, sd, sgate; // shared expert and its gate
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
    Vec embed, final_norm;
    Linear lm_head; // empty when tied
    std::vector<Layer> layers;
};

namespace {

/// The per-layer state of one sequence.
struct LayerState {
    std::vector<Vec> keys, values; // per position
    std::vector<Vec> history;      // the last K conv inputs, oldest first
    Vec S;                         // nv × dk × dv
};

} // namespace

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
    const bool hybrid = type == "qwen3_next" || type == "qwen3_5" || type == "qwen3_5_text";
    const bool gemma = type == "gemma2", deepseek = type == "deepseek_v2" || type == "deepseek_v3";
    if (!hybrid && !gemma && !deepseek && type != "qwen3" && type != "qwen2" && type != "llama" &&
        type != "mistral")
        throw Error(
            fmt::format("{}: the f64 decoder reference does not evaluate model_type `{}` (it evaluates "
                        "qwen3, qwen2, llama, mistral, gemma2, deepseek_v2, deepseek_v3, qwen3_next, "
                        "qwen3_5 and qwen3_5_text)",
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
        W.top_k = f.count("num_experts_per_tok", 10);
        W.norm_topk = f.flag("norm_topk_prob", true);
    }
    const bool tied = f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", gemma));

    std::string prefix;
    for (std::string p : {"model.language_model.", "model.", ""})
        if (has(c, p + "embed_tokens.weight")) {
            prefix = p;
            break;
        }
    W.embed = tensor(c, prefix + "embed_tokens.weight");
    W.final_norm = tensor(c, prefix + "norm.weight");
    if (!tied) W.lm_head = linear(c, "lm_head");

    // Sliding windows (qwen2/qwen3 with use_sliding_window).
    std::optional<std::size_t> window;
    if ((type == "qwen2" || type == "qwen3") && f.flag("use_sliding_window", false))
        window = f.count("sliding_window");
    // Mistral: every layer, 4096 when absent, none when null.
    const bool mistral = type == "mistral";
    if ((mistral || gemma) && (f.has("sliding_window") || !f.present("sliding_window")))
        window = f.count("sliding_window", 4096);
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
            if (has(c, p + "linear_attn.in_proj_qkvz.weight")) {
                l.qkvz = linear(c, p + "linear_attn.in_proj_qkvz");
                l.ba = linear(c, p + "linear_attn.in_proj_ba");
            } else {
                l.qkv = linear(c, p + "linear_attn.in_proj_qkv");
                l.z = linear(c, p + "linear_attn.in_proj_z");
                l.b = linear(c, p + "linear_attn.in_proj_b");
                l.a = linear(c, p + "linear_attn.in_proj_a");
            }
            l.conv = tensor(c, p + "linear_attn.conv1d.weight");
            l.dt_bias = tensor(c, p + "linear_attn.dt_bias");
            l.a_log = tensor(c, p + "linear_attn.A_log");
            l.norm = tensor(c, p + "linear_attn.norm.weight");
            l.out = linear(c, p + "linear_attn.out_proj");
        } else if (W.latent) {
            if (has(c, p + "self_attn.q_a_proj.weight")) {
                l.q_a = linear(c, p + "self_attn.q_a_proj");
                l.q_a_norm = tensor(c, p + "self_attn.q_a_layernorm.weight");
                l.q_b = linear(c, p + "self_attn.q_b_proj");
            } else {
                l.q = linear(c, p + "self_attn.q_proj");
            }
            l.kv_a = linear(c, p + "self_attn.kv_a_proj_with_mqa");
            l.kv_a_norm = tensor(c, p + "self_attn.kv_a_layernorm.weight");
            l.kv_b = linear(c, p + "self_attn.kv_b_proj");
            l.o = linear(c, p + "self_attn.o_proj");
        } else {
            l.q = linear(c, p + "self_attn.q_proj");
            l.k = linear(c, p + "self_attn.k_proj");
            l.v = linear(c, p + "self_attn.v_proj");
            l.o = linear(c, p + "self_attn.o_proj");
            if (has(c, p + "self_attn.q_norm.weight")) {
                l.q_norm = tensor(c, p + "self_attn.q_norm.weight");
                l.k_norm = tensor(c, p + "self_attn.k_norm.weight");
            }
            // Gemma-2 without layer_types: the even layers slide.
            const bool sliding = mistral || (types   ? (*types)[i] == "sliding_attention"
                                             : gemma ? i % 2 == 0
                                                     : i >= max_window_layers);
            if (window && sliding) l.window = window;
        }
        if (has(c, p + "mlp.gate.weight")) {
            l.router = linear(c, p + "mlp.gate");
            for (std::size_t e = 0; e < l.router.out; ++e) {
                l.eg.push_back(linear(c, fmt::format("{}mlp.experts.{}.gate_proj", p, e)));
                l.eu.push_back(linear(c, fmt::format("{}mlp.experts.{}.up_proj", p, e)));
                l.ed.push_back(linear(c, fmt::format("{}mlp.experts.{}.down_proj", p, e)));
            }
            if (has(c, p + "mlp.shared_expert.gate_proj.weight")) {
                l.sg = linear(c, p + "mlp.shared_expert.gate_proj");
                l.su = linear(c, p + "mlp.shared_expert.up_proj");
                l.sd = linear(c, p + "mlp.shared_expert.down_proj");
                l.sgate = linear(c, p + "mlp.shared_expert_gate");
            }
        } else {
            l.gate = linear(c, p + "mlp.gate_proj");
            l.up = linear(c, p + "mlp.up_proj");
            l.down = linear(c, p + "mlp.down_proj");
        }
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

namespace {

using Weights = DecoderReference::Weights;

/// softmax attention of one token over its cache (Qwen3Attention / Qwen3NextAttention / LlamaAttention).
Vec attention(const Weights& W, const Weights::Layer& l, LayerState& s, const Vec& h, std::size_t pos) {
    const std::size_t hd = W.head_dim, H = W.heads;
    const bool gated = l.q.out == 2 * H * hd;
    const Vec qfull = l.q(h);
    Vec q(H * hd), gate;
    if (gated) {
        gate.resize(H * hd);
        for (std::size_t h0 = 0; h0 < H; ++h0)
            for (std::size_t i = 0; i < hd; ++i) {
                q[h0 * hd + i] = qfull[h0 * 2 * hd + i];
                gate[h0 * hd + i] = qfull[h0 * 2 * hd + hd + i];
            }
    } else {
        q = qfull;
    }
    Vec k = l.k(h), v = l.v(h);
    auto per_head = [&](Vec& x, const Vec& w) {
        for (std::size_t h0 = 0; h0 * hd < x.size(); ++h0) {
            Vec head(x.begin() + static_cast<std::ptrdiff_t>(h0 * hd),
                     x.begin() + static_cast<std::ptrdiff_t>((h0 + 1) * hd));
            head = rms_norm(head, w, W.eps, W.zero_centred);
            std::copy(head.begin(), head.end(), x.begin() + static_cast<std::ptrdiff_t>(h0 * hd));
        }
    };
    if (!l.q_norm.empty()) {
        per_head(q, l.q_norm);
        per_head(k, l.k_norm);
    }
    for (std::size_t h0 = 0; h0 < H; ++h0)
        rope(&q[h0 * hd], W.rotary_dim, pos, W.theta);
    for (std::size_t h0 = 0; h0 < W.kv_heads; ++h0)
        rope(&k[h0 * hd], W.rotary_dim, pos, W.theta);
    s.keys.push_back(k);
    s.values.push_back(v);
    const std::size_t groups = H / W.kv_heads;
    const double scaling = W.scaling.value_or(std::pow(static_cast<double>(hd), -0.5));
    Vec out(H * hd, 0.0);
    for (std::size_t h0 = 0; h0 < H; ++h0) {
        const std::size_t kh = h0 / groups; // repeat_kv
        std::vector<std::size_t> js;
        for (std::size_t j = 0; j <= pos; ++j)
            if (!l.window || pos - j < *l.window) js.push_back(j);
        Vec scores;
        for (auto j : js) {
            double d = 0;
            for (std::size_t i = 0; i < hd; ++i)
                d += q[h0 * hd + i] * s.keys[j][kh * hd + i];
            d *= scaling;
            if (W.attn_softcap) d = *W.attn_softcap * std::tanh(d / *W.attn_softcap); // Gemma-2
            scores.push_back(d);
        }
        const Vec p = softmax(scores);
        for (std::size_t m = 0; m < js.size(); ++m)
            for (std::size_t i = 0; i < hd; ++i)
                out[h0 * hd + i] += p[m] * s.values[js[m]][kh * hd + i];
    }
    if (gated)
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] *= sigmoid(gate[i]);
    return l.o(out);
}

/// DeepSeek's rotary embedding of one rope part `x` of `d`: V2 multiplies complex pairs
/// (x_2i + i·x_2i+1) by e^{i·pos·f_i}; V3 with rope_interleave reorders x to [x_0, x_2, …, x_1, x_3,
/// …] and applies the NeoX rotation (the result stays in that order, for queries and keys alike).
void deepseek_rope(const Weights& W, double* x, std::size_t pos) {
    const std::size_t d = W.rope_dim, half = d / 2;
    if (W.rotary == Weights::Rotary::NeoX) return rope(x, d, pos, W.theta);
    if (W.rotary == Weights::Rotary::Deinterleave) {
        Vec y(d);
        for (std::size_t i = 0; i < half; ++i) {
            y[i] = x[2 * i];
            y[half + i] = x[2 * i + 1];
        }
        rope(y.data(), d, pos, W.theta);
        std::copy(y.begin(), y.end(), x);
        return;
    }
    for (std::size_t i = 0; i < half; ++i) {
        const double f = static_cast<double>(pos) / std::pow(W.theta, static_cast<double>(2 * i) / d);
        const double re = x[2 * i], im = x[2 * i + 1], c = std::cos(f), s = std::sin(f);
        x[2 * i] = re * c - im * s;
        x[2 * i + 1] = re * s + im * c;
    }
}

/// DeepseekV2Attention / DeepseekV3Attention for one token, un-absorbed: keys
/// [k_nope | k_pe] and values per head, from the normed latent through kv_b_proj.
Vec latent_attention(const Weights& W, const Weights::Layer& l, LayerState& s, const Vec& h,
                     std::size_t pos) {
    const std::size_t H = W.heads, nope = W.nope, rd = W.rope_dim, qk = nope + rd, vd = W.v_dim;
    Vec q = l.q_a.empty() ? l.q(h) : l.q_b(rms_norm(l.q_a(h), l.q_a_norm, W.eps, false));
    const Vec ckv = l.kv_a(h);
    const Vec latent = rms_norm(Vec(ckv.begin(), ckv.begin() + static_cast<std::ptrdiff_t>(W.kv_rank)),
                                l.kv_a_norm, W.eps, false);
    Vec k_pe(ckv.begin() + static_cast<std::ptrdiff_t>(W.kv_rank), ckv.end());
    const Vec kv = l.kv_b(latent); // per head [k_nope | v]
    for (std::size_t h0 = 0; h0 < H; ++h0)
        deepseek_rope(W, &q[h0 * qk + nope], pos);
    deepseek_rope(W, k_pe.data(), pos);
    Vec key(H * qk), value(H * vd);
    for (std::size_t h0 = 0; h0 < H; ++h0) {
        for (std::size_t i = 0; i < nope; ++i)
            key[h0 * qk + i] = kv[h0 * (nope + vd) + i];
        for (std::size_t i = 0; i < rd; ++i)
            key[h0 * qk + nope + i] = k_pe[i]; // k_pe.expand over the heads
        for (std::size_t i = 0; i < vd; ++i)
            value[h0 * vd + i] = kv[h0 * (nope + vd) + nope + i];
    }
    s.keys.push_back(key);
    s.values.push_back(value);
    Vec out(H * vd, 0.0);
    for (std::size_t h0 = 0; h0 < H; ++h0) {
        Vec scores;
        for (std::size_t j = 0; j <= pos; ++j) {
            double d = 0;
            for (std::size_t i = 0; i < qk; ++i)
                d += q[h0 * qk + i] * s.keys[j][h0 * qk + i];
            scores.push_back(d * *W.scaling);
        }
        const Vec p = softmax(scores);
        for (std::size_t j = 0; j <= pos; ++j)
            for (std::size_t i = 0; i < vd; ++i)
                out[h0 * vd + i] += p[j] * s.values[j][h0 * vd + i];
    }
    return l.o(out);
}

/// One token of a Gated-DeltaNet (Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet, recurrent path).
Vec deltanet(const Weights& W, const Weights::Layer& l, LayerState& s, const Vec& h) {
    const std::size_t nk = W.nk, nv = W.nv, dk = W.dk, dv = W.dv, r = nv / nk;
    const std::size_t key_dim = nk * dk;
    Vec q, k, v, z, b, a;
    if (!l.qkvz.empty()) {
        // fix_query_key_value_ordering: [nk, 2·dk + 2·r·dv] and [nk, 2·r].
        const Vec m = l.qkvz(h), n = l.ba(h);
        const std::size_t per = 2 * dk + 2 * r * dv;
        for (std::size_t g = 0; g < nk; ++g) {
            const double* row = &m[g * per];
            q.insert(q.end(), row, row + dk);
            k.insert(k.end(), row + dk, row + 2 * dk);
            v.insert(v.end(), row + 2 * dk, row + 2 * dk + r * dv);
            z.insert(z.end(), row + 2 * dk + r * dv, row + per);
            b.insert(b.end(), &n[g * 2 * r], &n[g * 2 * r] + r);
            a.insert(a.end(), &n[g * 2 * r] + r, &n[g * 2 * r] + 2 * r);
        }
    } else {
        const Vec m = l.qkv(h);
        q.assign(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(key_dim));
        k.assign(m.begin() + static_cast<std::ptrdiff_t>(key_dim),
                 m.begin() + static_cast<std::ptrdiff_t>(2 * key_dim));
        v.assign(m.begin() + static_cast<std::ptrdiff_t>(2 * key_dim), m.end());
        z = l.z(h);
        b = l.b(h);
        a = l.a(h);
    }
    // causal_conv1d_update with SiLU over mixed_qkv = cat(q, k, v).
    Vec mixed = q;
    mixed.insert(mixed.end(), k.begin(), k.end());
    mixed.insert(mixed.end(), v.begin(), v.end());
    s.history.erase(s.history.begin());
    s.history.push_back(mixed);
    const std::size_t K = W.kernel, C = mixed.size();
    Vec conv(C, 0.0);
    for (std::size_t ch = 0; ch < C; ++ch) {
        double acc = 0;
        for (std::size_t j = 0; j < K; ++j)
            acc += l.conv[ch * K + j] * s.history[j][ch];
        conv[ch] = silu(acc);
    }
    Vec out(nv * dv, 0.0);
    for (std::size_t hv = 0; hv < nv; ++hv) {
        const std::size_t hk = hv / r; // repeat_interleave
        Vec qh(conv.begin() + static_cast<std::ptrdiff_t>(hk * dk),
               conv.begin() + static_cast<std::ptrdiff_t>((hk + 1) * dk));
        Vec kh(conv.begin() + static_cast<std::ptrdiff_t>(key_dim + hk * dk),
               conv.begin() + static_cast<std::ptrdiff_t>(key_dim + (hk + 1) * dk));
        const double* vh = &conv[2 * key_dim + hv * dv];
        auto l2 = [](Vec& x) {
            double ss = 0;
            for (double e : x)
                ss += e * e;
            const double inv = 1.0 / std::sqrt(ss + 1e-6);
            for (double& e : x)
                e *= inv;
        };
        l2(qh);
        l2(kh);
        for (double& e : qh)
            e /= std::sqrt(static_cast<double>(dk));
        const double beta = sigmoid(b[hv]);
        const double g = -std::exp(l.a_log[hv]) * softplus(a[hv] + l.dt_bias[hv]);
        double* S = &s.S[hv * dk * dv];
        for (std::size_t i = 0; i < dk * dv; ++i)
            S[i] *= std::exp(g);
        for (std::size_t j = 0; j < dv; ++j) {
            double mem = 0;
            for (std::size_t i = 0; i < dk; ++i)
                mem += S[i * dv + j] * kh[i];
            const double delta = (vh[j] - mem) * beta;
            for (std::size_t i = 0; i < dk; ++i)
                S[i * dv + j] += kh[i] * delta;
        }
        Vec o(dv, 0.0);
        for (std::size_t j = 0; j < dv; ++j)
            for (std::size_t i = 0; i < dk; ++i)
                o[j] += S[i * dv + j] * qh[i];
        // RMSNormGated: weight · (o / rms(o)) · silu(z), per head.
        double ms = 0;
        for (double e : o)
            ms += e * e;
        const double inv = 1.0 / std::sqrt(ms / static_cast<double>(dv) + W.eps);
        for (std::size_t j = 0; j < dv; ++j)
            out[hv * dv + j] = l.norm[j] * (o[j] * inv) * silu(z[hv * dv + j]);
    }
    return l.out(out);
}

Vec swiglu(const Linear& gate, const Linear& up, const Linear& down, const Vec& x) {
    Vec g = gate(x);
    const Vec u = up(x);
    for (std::size_t i = 0; i < g.size(); ++i)
        g[i] = silu(g[i]) * u[i];
    return down(g);
}

/// The dense MLP `down(act(gate(x)) · up(x))`: SiLU, or Gemma's GELU (`gelu` exact, otherwise
/// transformers' `gelu_pytorch_tanh` formula).
Vec mlp(const Weights& W, const Weights::Layer& l, const Vec& x) {
    if (W.act == Weights::Act::Silu) return swiglu(l.gate, l.up, l.down, x);
    Vec g = l.gate(x);
    const Vec u = l.up(x);
    const double k = std::sqrt(2.0 / std::numbers::pi);
    for (std::size_t i = 0; i < g.size(); ++i) {
        const double v = g[i];
        const double act = W.act == Weights::Act::Gelu
                               ? gelu(v)
                               : 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
        g[i] = act * u[i];
    }
    return l.down(g);
}

/// Qwen3NextSparseMoeBlock for one token.
Vec experts(const Weights& W, const Weights::Layer& l, const Vec& x) {
    const Vec p = softmax(l.router(x));
    std::vector<std::size_t> idx(p.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](auto i, auto j) { return p[i] > p[j]; });
    idx.resize(W.top_k);
    double sum = 0;
    for (auto e : idx)
        sum += p[e];
    Vec y(x.size(), 0.0);
    for (auto e : idx) {
        const double weight = W.norm_topk ? p[e] / sum : p[e];
        const Vec ye = swiglu(l.eg[e], l.eu[e], l.ed[e], x);
        for (std::size_t c = 0; c < y.size(); ++c)
            y[c] += weight * ye[c];
    }
    if (!l.sg.empty()) {
        const Vec ys = swiglu(l.sg, l.su, l.sd, x);
        const double gate = sigmoid(l.sgate(x)[0]);
        for (std::size_t c = 0; c < y.size(); ++c)
            y[c] += gate * ys[c];
    }
    return y;
}

} // namespace

std::vector<double> DecoderReference::Session::feed(std::int64_t token) {
    const Weights& W = *ref_->w_;
    if (token < 0 || static_cast<std::size_t>(token) >= W.vocab)
        throw Error(fmt::format("token {} is outside the vocabulary of {}", token, W.vocab));
    const std::size_t pos = length_;
    Vec x(W.embed.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(token) * W.hidden),
          W.embed.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(token) + 1) * W.hidden));
    for (auto& e : x)
        e *= W.embed_scale; // Gemma2Model's normalizer (1 elsewhere)
    for (std::size_t i = 0; i < W.layers.size(); ++i) {
        const auto& l = W.layers[i];
        const bool sandwich = !l.pre_ff_norm.empty(); // Gemma2DecoderLayer
        const Vec h = rms_norm(x, l.input_norm, W.eps, W.zero_centred);
        LayerState& state = layers_->layers[i];
        Vec y = l.linear   ? deltanet(W, l, state, h)
                : W.latent ? latent_attention(W, l, state, h, pos)
                           : attention(W, l, state, h, pos);
        if (sandwich) y = rms_norm(y, l.post_norm, W.eps, W.zero_centred);
        for (std::size_t c = 0; c < x.size(); ++c)
            x[c] += y[c];
        const Vec h2 = rms_norm(x, sandwich ? l.pre_ff_norm : l.post_norm, W.eps, W.zero_centred);
        Vec m = l.router.empty() ? mlp(W, l, h2) : experts(W, l, h2);
        if (sandwich) m = rms_norm(m, l.post_ff_norm, W.eps, W.zero_centred);
        for (std::size_t c = 0; c < x.size(); ++c)
            x[c] += m[c];
    }
    const Vec f = rms_norm(x, W.final_norm, W.eps, W.zero_centred);
    ++length_;
    Vec logits;
    if (!W.lm_head.empty()) {
        logits = W.lm_head(f);
    } else {
        logits.assign(W.vocab, 0.0);
        for (std::size_t t = 0; t < W.vocab; ++t)
            for (std::size_t c = 0; c < W.hidden; ++c)
                logits[t] += W.embed[t * W.hidden + c] * f[c];
    }
    if (W.final_softcap)
        for (auto& z : logits)
            z = *W.final_softcap * std::tanh(z / *W.final_softcap);
    return logits;
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
    Vec logits;
    for (auto t : prompt)
        logits = s.feed(t);
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
