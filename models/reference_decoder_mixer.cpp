// The decoder reference's Gated-DeltaNet mixer, from modeling_qwen3_next.py and modeling_qwen3_5.py
// (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include <algorithm>
#include <cmath>

namespace cardsim::models::reference::decoder {

void load_deltanet(const Checkpoint& c, const std::string& p, Layer& l) {
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
}

namespace {

/// One token of the Gated-DeltaNet after its projections: `m` is in_proj_qkvz's (with `n`
/// in_proj_ba's) or in_proj_qkv's (with `z0`, `b0`, `a0` of in_proj_z, _b, _a); returns the gated
/// norm's output, before out_proj. Updates the conv history and the state.
Vec deltanet_token(const Weights& W, const Layer& l, LayerState& s, const Vec& m, const Vec* n, const Vec* z0,
                   const Vec* b0, const Vec* a0) {
    const std::size_t nk = W.nk, nv = W.nv, dk = W.dk, dv = W.dv, r = nv / nk;
    const std::size_t key_dim = nk * dk;
    Vec q, k, v, z, b, a;
    if (n) {
        // fix_query_key_value_ordering: [nk, 2·dk + 2·r·dv] and [nk, 2·r].
        const std::size_t per = 2 * dk + 2 * r * dv;
        for (std::size_t g = 0; g < nk; ++g) {
            const double* row = &m[g * per];
            q.insert(q.end(), row, row + dk);
            k.insert(k.end(), row + dk, row + 2 * dk);
            v.insert(v.end(), row + 2 * dk, row + 2 * dk + r * dv);
            z.insert(z.end(), row + 2 * dk + r * dv, row + per);
            b.insert(b.end(), &(*n)[g * 2 * r], &(*n)[g * 2 * r] + r);
            a.insert(a.end(), &(*n)[g * 2 * r] + r, &(*n)[g * 2 * r] + 2 * r);
        }
    } else {
        q.assign(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(key_dim));
        k.assign(m.begin() + static_cast<std::ptrdiff_t>(key_dim),
                 m.begin() + static_cast<std::ptrdiff_t>(2 * key_dim));
        v.assign(m.begin() + static_cast<std::ptrdiff_t>(2 * key_dim), m.end());
        z = *z0;
        b = *b0;
        a = *a0;
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
    return out;
}

} // namespace

Rows deltanet(const Weights& W, const Layer& l, LayerState& s, const Rows& hs) {
    // The projections of every token at once; the recurrence then runs token by token.
    Rows ms, ns, zs, bs, as;
    if (!l.qkvz.empty()) {
        ms = l.qkvz(hs);
        ns = l.ba(hs);
    } else {
        ms = l.qkv(hs);
        zs = l.z(hs);
        bs = l.b(hs);
        as = l.a(hs);
    }
    Rows outs;
    for (std::size_t t = 0; t < hs.size(); ++t)
        outs.push_back(deltanet_token(W, l, s, ms[t], l.qkvz.empty() ? nullptr : &ns[t],
                                      l.qkvz.empty() ? &zs[t] : nullptr, l.qkvz.empty() ? &bs[t] : nullptr,
                                      l.qkvz.empty() ? &as[t] : nullptr));
    return l.out(outs);
}

} // namespace cardsim::models::reference::decoder
