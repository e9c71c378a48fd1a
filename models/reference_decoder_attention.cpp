// The decoder reference's attention: softmax attention (plain, gated, windowed, softcapped) and
// DeepSeek's latent attention, from modeling_qwen3.py, modeling_qwen3_next.py, modeling_llama.py,
// modeling_gemma2.py and modeling_deepseek_v2/v3.py (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include <algorithm>
#include <cmath>

namespace cardsim::models::reference::decoder {

void load_attention(const Checkpoint& c, const std::string& p, Layer& l) {
    l.q = linear(c, p + "self_attn.q_proj");
    l.k = linear(c, p + "self_attn.k_proj");
    l.v = linear(c, p + "self_attn.v_proj");
    l.o = linear(c, p + "self_attn.o_proj");
    if (has(c, p + "self_attn.q_norm.weight")) {
        l.q_norm = tensor(c, p + "self_attn.q_norm.weight");
        l.k_norm = tensor(c, p + "self_attn.k_norm.weight");
    }
    if (has(c, p + "self_attn.sinks")) l.sinks = tensor(c, p + "self_attn.sinks");
}

namespace {

/// The rotary embedding of one head's first `W.rotary_dim` values: theta's, or YaRN's frequencies with
/// cos and sin times its attention factor (gpt-oss).
void rotate_head(const Weights& W, double* x, std::size_t pos) {
    if (W.yarn_freqs.empty()) return rope(x, W.rotary_dim, pos, W.theta);
    const std::size_t half = W.rotary_dim / 2;
    for (std::size_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos) * W.yarn_freqs[i];
        const double c = std::cos(a) * W.yarn_factor, s = std::sin(a) * W.yarn_factor;
        const double x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
    }
}

} // namespace

void load_latent_attention(const Checkpoint& c, const std::string& p, Layer& l) {
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
}

Rows attention(const Weights& W, const Layer& l, LayerState& s, const Rows& hs, std::size_t pos0) {
    const std::size_t hd = W.head_dim, H = W.heads;
    const bool gated = l.q.out == 2 * H * hd;
    const Rows qs = l.q(hs), ks = l.k(hs), vs = l.v(hs);
    Rows outs;
    for (std::size_t t = 0; t < hs.size(); ++t) {
        const std::size_t pos = pos0 + t;
        const Vec& qfull = qs[t];
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
        Vec k = ks[t];
        const Vec& v = vs[t];
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
            rotate_head(W, &q[h0 * hd], pos);
        for (std::size_t h0 = 0; h0 < W.kv_heads; ++h0)
            rotate_head(W, &k[h0 * hd], pos);
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
            if (!l.sinks.empty()) scores.push_back(l.sinks[h0]); // gpt-oss: the sink's share, no value
            const Vec p = softmax(scores);
            for (std::size_t m = 0; m < js.size(); ++m)
                for (std::size_t i = 0; i < hd; ++i)
                    out[h0 * hd + i] += p[m] * s.values[js[m]][kh * hd + i];
        }
        if (gated)
            for (std::size_t i = 0; i < out.size(); ++i)
                out[i] *= sigmoid(gate[i]);
        outs.push_back(std::move(out));
    }
    return l.o(outs);
}

namespace {

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

} // namespace

Rows latent_attention(const Weights& W, const Layer& l, LayerState& s, const Rows& hs, std::size_t pos0) {
    const std::size_t H = W.heads, nope = W.nope, rd = W.rope_dim, qk = nope + rd, vd = W.v_dim;
    Rows qs;
    if (l.q_a.empty()) {
        qs = l.q(hs);
    } else {
        Rows qa = l.q_a(hs);
        for (auto& x : qa)
            x = rms_norm(x, l.q_a_norm, W.eps, false);
        qs = l.q_b(qa);
    }
    const Rows ckvs = l.kv_a(hs);
    Rows latents;
    for (const auto& ckv : ckvs)
        latents.push_back(rms_norm(Vec(ckv.begin(), ckv.begin() + static_cast<std::ptrdiff_t>(W.kv_rank)),
                                   l.kv_a_norm, W.eps, false));
    const Rows kvs = l.kv_b(latents); // per head [k_nope | v]
    Rows outs;
    for (std::size_t t = 0; t < hs.size(); ++t) {
        const std::size_t pos = pos0 + t;
        Vec& q = qs[t];
        const Vec& kv = kvs[t];
        Vec k_pe(ckvs[t].begin() + static_cast<std::ptrdiff_t>(W.kv_rank), ckvs[t].end());
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
            if (!l.sinks.empty()) scores.push_back(l.sinks[h0]); // gpt-oss: the sink's share, no value
            const Vec p = softmax(scores);
            for (std::size_t j = 0; j <= pos; ++j)
                for (std::size_t i = 0; i < vd; ++i)
                    out[h0 * vd + i] += p[j] * s.values[j][h0 * vd + i];
        }
        outs.push_back(std::move(out));
    }
    return l.o(outs);
}

} // namespace cardsim::models::reference::decoder
