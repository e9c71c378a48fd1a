// The decoder reference's sparse mixture of experts, from modeling_qwen3_moe.py and modeling_qwen3_next.py
// (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace cardsim::models::reference::decoder {

void load_experts(const Checkpoint& c, const std::string& p, Layer& l) {
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

} // namespace cardsim::models::reference::decoder
