// The f64 evaluation of a mixture of experts (graph_eval_ops.hpp).

#include "models/graph_eval_ops.hpp"

#include "engine/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace cardsim::models {

using namespace graph;
using namespace eval_math;

void GraphEvaluator::OpEval::eval(std::size_t index, const Moe& o) {
    if (o.partial || o.routed() != o.gate.size())
        throw Error(fmt::format("op {} (Moe of an expert-parallel card): the f64 evaluator runs the whole "
                                "model's graph",
                                index));
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t H = x.cols;
    // y = W x (+ b) for a view W of [n, k] (a Linear's), or of [k, n] multiplied as x · W.
    auto linear = [&](const Weight& w, const double* in, std::size_t k, const std::optional<Weight>& b = {}) {
        const auto& m = constant(w);
        const bool t = graph::transposed(w.view);
        const std::size_t n = m.size() / k;
        std::vector<double> y(n);
        for (std::size_t j = 0; j < n; ++j) {
            for (std::size_t i = 0; i < k; ++i)
                y[j] += (t ? m[j * k + i] : m[i * n + j]) * in[i];
            if (b) y[j] += constant(*b)[j];
        }
        return y;
    };
    auto bias_of = [&](const std::vector<Weight>& list, std::size_t e) -> std::optional<Weight> {
        if (list.empty()) return std::nullopt;
        return list[e];
    };
    // An expert's MLP: SwiGLU, or gpt-oss's clamped one (gate ≤ L, up in [−L, L], (up + 1) · g · σ(α g)).
    auto mlp = [&](const Weight& gw, const Weight& uw, const Weight& dw, const double* in,
                   const std::optional<Weight>& gb, const std::optional<Weight>& ub,
                   const std::optional<Weight>& db) {
        auto gg = linear(gw, in, H, gb);
        auto uu = linear(uw, in, H, ub);
        for (std::size_t i = 0; i < gg.size(); ++i) {
            if (o.swiglu_limit) {
                const double L = *o.swiglu_limit, g = std::min(gg[i], L), u = std::clamp(uu[i], -L, L);
                gg[i] = (u + 1) * g * sigmoid(o.swiglu_alpha * g);
            } else {
                gg[i] = silu(gg[i]) * uu[i];
            }
        }
        return linear(dw, gg.data(), gg.size(), db);
    };
    for (std::size_t r = 0; r < x.rows; ++r) {
        const double* in = &x.data[r * H];
        auto p = linear(o.router, in, H, o.router_bias);
        softmax(p);
        std::vector<std::size_t> order(p.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](auto i, auto j) { return p[i] > p[j]; });
        order.resize(o.top_k);
        double total = 0;
        for (auto e : order)
            total += p[e];
        std::vector<double> y(H, 0.0);
        for (auto e : order) {
            const double weight = o.norm_topk_prob ? p[e] / total : p[e];
            auto ye = mlp(o.gate[e], o.up[e], o.down[e], in, bias_of(o.gate_bias, e), bias_of(o.up_bias, e),
                          bias_of(o.down_bias, e));
            for (std::size_t c = 0; c < H; ++c)
                y[c] += weight * ye[c];
        }
        if (o.shared_gate && o.shared_up && o.shared_down) {
            auto ys = mlp(*o.shared_gate, *o.shared_up, *o.shared_down, in, {}, {}, {});
            double gate = 1.0;
            if (o.shared_expert_gate) gate = sigmoid(linear(*o.shared_expert_gate, in, H)[0]);
            for (std::size_t c = 0; c < H; ++c)
                y[c] += gate * ys[c];
        }
        std::copy(y.begin(), y.end(), out.data.begin() + static_cast<std::ptrdiff_t>(r * H));
    }
}

} // namespace cardsim::models
