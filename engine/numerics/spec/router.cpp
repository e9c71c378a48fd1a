#include "engine/numerics/spec/router.hpp"

#include "engine/error.hpp"
#include "engine/numerics/nan.hpp"
#include "engine/numerics/spec/exact.hpp"
#include "engine/numerics/spec/functions.hpp"
#include "engine/numerics/spec/window.hpp"

#include <cmath>
#include <limits>

namespace cardsim::numerics::spec {

Routing route(std::span<const float> logits, std::size_t k, RouterNorm norm) {
    const std::size_t E = logits.size();
    if (k == 0 || k > E) throw Error("spec router: k must be 1 .. E");
    Routing r;
    for (float z : logits)
        if (!std::isfinite(z)) {
            for (std::size_t i = 0; i < k; ++i) {
                r.experts.push_back(static_cast<std::uint32_t>(i));
                r.weights.push_back(qnan);
            }
            return r;
        }
    // k rounds: the largest value not yet chosen, the lowest index among equals.
    std::vector<Rational> z;
    for (float v : logits)
        z.push_back(value(v));
    std::vector<bool> taken(E, false);
    for (std::size_t i = 0; i < k; ++i) {
        std::size_t best = E;
        for (std::size_t e = 0; e < E; ++e)
            if (!taken[e] && (best == E || z[e] > z[best])) best = e;
        taken[best] = true;
        r.experts.push_back(static_cast<std::uint32_t>(best));
    }
    const float m = logits[r.experts[0]];
    auto p = [&](std::size_t e) { return reference(Function::Exp, sub(logits[e], m)); };
    std::vector<Rational> terms;
    if (norm == RouterNorm::TopK)
        for (auto e : r.experts)
            terms.push_back(value(p(e)));
    else
        for (std::size_t e = 0; e < E; ++e)
            terms.push_back(value(p(e)));
    const float sum = window_sum(terms);
    for (auto e : r.experts)
        r.weights.push_back(div(p(e), sum));
    return r;
}

std::vector<float> combine(std::span<const float> weights, std::span<const float> outputs, std::size_t n,
                           const std::optional<SharedExpert>& shared) {
    const std::size_t k = weights.size();
    if (outputs.size() != k * n || (shared && shared->out.size() != n))
        throw Error("spec combine: sizes disagree");
    const float g = shared ? reference(Function::Sigmoid, shared->gate_logit) : 0.0f;
    std::vector<float> y;
    for (std::size_t c = 0; c < n; ++c) {
        std::vector<float> a, b;
        for (std::size_t i = 0; i < k; ++i) {
            a.push_back(weights[i]);
            b.push_back(outputs[i * n + c]);
        }
        if (shared) {
            a.push_back(g);
            b.push_back(shared->out[c]);
        }
        bool finite = true;
        std::vector<Rational> terms;
        for (std::size_t t = 0; t < a.size() && finite; ++t) {
            finite = std::isfinite(a[t]) && std::isfinite(b[t]);
            if (finite) terms.push_back(value(a[t]) * value(b[t]));
        }
        y.push_back(finite ? window_sum(terms) : qnan);
    }
    return y;
}

} // namespace cardsim::numerics::spec
