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
    if (o.router_bias || !o.gate_bias.empty() || !o.down_bias.empty() || o.swiglu_limit)
        throw Error(
            fmt::format("op {} (Moe): the graph's f64 evaluation has no router bias, expert biases or "
                        "clamped SwiGLU (gpt-oss) yet",
                        index));
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t H = x.cols;
    // y = W x for a Linear view W of [n, H].
    auto linear = [&](const Weight& w, const double* in, std::size_t k) {
        const auto& m = constant(w);
        std::vector<double> y(m.size() / k);
        for (std::size_t j = 0; j < y.size(); ++j)
            for (std::size_t i = 0; i < k; ++i)
                y[j] += m[j * k + i] * in[i];
        return y;
    };
    auto mlp = [&](const Weight& gw, const Weight& uw, const Weight& dw, const double* in) {
        auto gg = linear(gw, in, H);
        auto uu = linear(uw, in, H);
        for (std::size_t i = 0; i < gg.size(); ++i)
            gg[i] = silu(gg[i]) * uu[i];
        return linear(dw, gg.data(), gg.size());
    };
    for (std::size_t r = 0; r < x.rows; ++r) {
        const double* in = &x.data[r * H];
        auto p = linear(o.router, in, H);
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
            auto ye = mlp(o.gate[e], o.up[e], o.down[e], in);
            for (std::size_t c = 0; c < H; ++c)
                y[c] += weight * ye[c];
        }
        if (o.shared_gate && o.shared_up && o.shared_down) {
            auto ys = mlp(*o.shared_gate, *o.shared_up, *o.shared_down, in);
            double gate = 1.0;
            if (o.shared_expert_gate) gate = sigmoid(linear(*o.shared_expert_gate, in, H)[0]);
            for (std::size_t c = 0; c < H; ++c)
                y[c] += gate * ys[c];
        }
        std::copy(y.begin(), y.end(), out.data.begin() + static_cast<std::ptrdiff_t>(r * H));
    }
}

} // namespace cardsim::models
