// The decoder reference's sparse mixture of experts, from modeling_qwen3_moe.py, modeling_qwen3_next.py
// and modeling_qwen3_5_moe.py (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include "engine/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
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

namespace {

/// Each token's chosen experts (its slots, in order) and their weights.
struct Choice {
    std::vector<std::size_t> experts;
    std::vector<double> weights;
};

/// `run(e, rows)` for each expert some token chose, on the rows of `xs` that chose it (in token
/// order), and the outputs back in each token's slots: `out[t][m]` is token t's m-th expert's.
std::vector<Rows> per_expert(const std::vector<Choice>& chosen, const Rows& xs,
                             const std::function<Rows(std::size_t e, const Rows& rows)>& run) {
    std::map<std::size_t, std::vector<std::pair<std::size_t, std::size_t>>> users; // e -> (t, m)
    for (std::size_t t = 0; t < chosen.size(); ++t)
        for (std::size_t m = 0; m < chosen[t].experts.size(); ++m)
            users[chosen[t].experts[m]].emplace_back(t, m);
    std::vector<Rows> out(chosen.size());
    for (std::size_t t = 0; t < chosen.size(); ++t)
        out[t].resize(chosen[t].experts.size());
    for (const auto& [e, slots] : users) {
        Rows rows;
        for (auto [t, m] : slots)
            rows.push_back(xs[t]);
        Rows ys = run(e, rows);
        for (std::size_t i = 0; i < slots.size(); ++i)
            out[slots[i].first][slots[i].second] = std::move(ys[i]);
    }
    return out;
}

/// Each token's `width` outputs: Σ over its slots m, in order, of weight m × expert m's output.
Rows weighted_sum(const std::vector<Choice>& chosen, const std::vector<Rows>& ye, std::size_t width) {
    Rows ys;
    for (std::size_t t = 0; t < chosen.size(); ++t) {
        Vec y(width, 0.0);
        for (std::size_t m = 0; m < chosen[t].experts.size(); ++m)
            for (std::size_t c = 0; c < width; ++c)
                y[c] += chosen[t].weights[m] * ye[t][m][c];
        ys.push_back(std::move(y));
    }
    return ys;
}

} // namespace

Rows experts(const Weights& W, const Layer& l, const Rows& xs) {
    const Rows logits = l.router(xs);
    std::vector<Choice> chosen;
    for (const auto& z : logits) {
        const Vec p = softmax(z);
        std::vector<std::size_t> idx(p.size());
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](auto i, auto j) { return p[i] > p[j]; });
        idx.resize(W.top_k);
        double sum = 0;
        for (auto e : idx)
            sum += p[e];
        Choice c{idx, {}};
        for (auto e : idx)
            c.weights.push_back(W.norm_topk ? p[e] / sum : p[e]);
        chosen.push_back(std::move(c));
    }
    const auto ye = per_expert(
        chosen, xs, [&](std::size_t e, const Rows& rows) { return swiglu(l.eg[e], l.eu[e], l.ed[e], rows); });
    Rows shared, gates;
    if (!l.sg.empty()) {
        shared = swiglu(l.sg, l.su, l.sd, xs);
        gates = l.sgate(xs);
    }
    Rows ys = weighted_sum(chosen, ye, xs.empty() ? 0 : xs[0].size());
    for (std::size_t t = 0; t < ys.size() && !l.sg.empty(); ++t) {
        const double gate = sigmoid(gates[t][0]);
        for (std::size_t c = 0; c < ys[t].size(); ++c)
            ys[t][c] += gate * shared[t][c];
    }
    return ys;
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

Rows oss_experts(const Weights& W, const Layer& l, const Rows& xs) {
    const Rows logits = l.router(xs);
    std::vector<Choice> chosen;
    for (const auto& z : logits) {
        std::vector<std::size_t> idx(z.size());
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](auto i, auto j) { return z[i] > z[j]; });
        idx.resize(W.top_k);
        Vec top;
        for (auto e : idx)
            top.push_back(z[e]);
        chosen.push_back(Choice{idx, softmax(top)});
    }
    const auto ye = per_expert(chosen, xs, [&](std::size_t e, const Rows& rows) {
        Rows g = l.eg[e](rows);
        const Rows u = l.eu[e](rows);
        for (std::size_t t = 0; t < g.size(); ++t)
            for (std::size_t j = 0; j < g[t].size(); ++j) {
                const double L = W.swiglu_limit, gate = std::min(g[t][j], L), up = std::clamp(u[t][j], -L, L);
                g[t][j] = (up + 1) * gate * sigmoid(W.swiglu_alpha * gate);
            }
        return l.ed[e](g);
    });
    return weighted_sum(chosen, ye, xs.empty() ? 0 : xs[0].size());
}

} // namespace cardsim::models::reference::decoder
