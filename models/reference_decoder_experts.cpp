// The decoder reference's sparse mixture of experts, from modeling_qwen3_moe.py, modeling_qwen3_next.py
// and modeling_qwen3_5_moe.py (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include "engine/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace cardsim::models::reference::decoder {

namespace {

/// Expert e of each of `n` experts in the fused tensor `name` [n, out, in] (Qwen3_5MoeExperts),
/// split in `parts` Linears of out / parts rows each, in row order (gate_up_proj: gate, then up).
std::vector<std::vector<Linear>> fused_experts(const Checkpoint& c, const std::string& name, std::size_t n,
                                               std::size_t parts) {
    const auto w = c.require(name);
    const auto shape = c.shape(w);
    if (shape.size() != 3 || shape[0] != n || shape[1] % parts != 0)
        throw Error(fmt::format("{}: `{}` is [{}], expected [{}, {}·k, in] ({} experts)", c.dir().string(),
                                name, fmt::join(shape, ", "), n, parts, n));
    const std::size_t rows = shape[1] / parts;
    std::vector<std::vector<Linear>> out(parts);
    for (std::size_t e = 0; e < n; ++e)
        for (std::size_t p = 0; p < parts; ++p)
            out[p].push_back(rows_of(c, w, e * shape[1] + p * rows, rows));
    return out;
}

} // namespace

void load_experts(const Checkpoint& c, const std::string& p, Layer& l) {
    l.router = linear(c, p + "mlp.gate");
    const bool fused = has(c, p + "mlp.experts.gate_up_proj");
    if (fused) {
        // Qwen3.5-MoE: gate_up_proj [E, 2I, H] (gate rows, then up: `.chunk(2, dim=-1)`), down_proj [E, H,
        // I].
        auto gate_up = fused_experts(c, p + "mlp.experts.gate_up_proj", l.router.out, 2);
        l.eg = std::move(gate_up[0]);
        l.eu = std::move(gate_up[1]);
        l.ed = std::move(fused_experts(c, p + "mlp.experts.down_proj", l.router.out, 1)[0]);
    }
    for (std::size_t e = 0; !fused && e < l.router.out; ++e) {
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
}

Vec experts(const Weights& W, const Layer& l, const Vec& x) {
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

void load_oss_experts(const Checkpoint& c, const std::string& p, std::size_t E, Layer& l) {
    l.router = linear(c, p + "mlp.router");
    const Vec gate_up = tensor(c, p + "mlp.experts.gate_up_proj"),
              gub = tensor(c, p + "mlp.experts.gate_up_proj_bias");
    const Vec down = tensor(c, p + "mlp.experts.down_proj"), db = tensor(c, p + "mlp.experts.down_proj_bias");
    const std::size_t H = l.router.in, I = gate_up.size() / (E * H * 2);
    if (E == 0 || gate_up.size() != E * H * 2 * I || down.size() != E * I * H || gub.size() != E * 2 * I ||
        db.size() != E * H)
        throw Error(
            fmt::format("{}: gpt-oss's experts of layer `{}` are not [E, H, 2I] and [E, I, H] ({} experts)",
                        c.dir().string(), p, E));
    for (std::size_t e = 0; e < E; ++e) {
        Linear g, u, d;
        g.out = u.out = I;
        g.in = u.in = H;
        g.w.resize(I * H);
        u.w.resize(I * H);
        for (std::size_t j = 0; j < I; ++j) { // gate_up[..., ::2] and [..., 1::2], as x · W
            for (std::size_t i = 0; i < H; ++i) {
                g.w[j * H + i] = gate_up[(e * H + i) * 2 * I + 2 * j];
                u.w[j * H + i] = gate_up[(e * H + i) * 2 * I + 2 * j + 1];
            }
            g.b.push_back(gub[e * 2 * I + 2 * j]);
            u.b.push_back(gub[e * 2 * I + 2 * j + 1]);
        }
        d.out = H;
        d.in = I;
        d.w.resize(H * I);
        for (std::size_t col = 0; col < H; ++col) {
            for (std::size_t j = 0; j < I; ++j)
                d.w[col * I + j] = down[(e * I + j) * H + col];
            d.b.push_back(db[e * H + col]);
        }
        l.eg.push_back(std::move(g));
        l.eu.push_back(std::move(u));
        l.ed.push_back(std::move(d));
    }
}

Vec oss_experts(const Weights& W, const Layer& l, const Vec& x) {
    const Vec z = l.router(x);
    std::vector<std::size_t> idx(z.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](auto i, auto j) { return z[i] > z[j]; });
    idx.resize(W.top_k);
    Vec chosen;
    for (auto e : idx)
        chosen.push_back(z[e]);
    const Vec p = softmax(chosen);
    Vec y(x.size(), 0.0);
    for (std::size_t m = 0; m < idx.size(); ++m) {
        const std::size_t e = idx[m];
        Vec g = l.eg[e](x);
        const Vec u = l.eu[e](x);
        for (std::size_t j = 0; j < g.size(); ++j) {
            const double L = W.swiglu_limit, gate = std::min(g[j], L), up = std::clamp(u[j], -L, L);
            g[j] = (up + 1) * gate * sigmoid(W.swiglu_alpha * gate);
        }
        const Vec ye = l.ed[e](g);
        for (std::size_t c = 0; c < y.size(); ++c)
            y[c] += p[m] * ye[c];
    }
    return y;
}

} // namespace cardsim::models::reference::decoder
