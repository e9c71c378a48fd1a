#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/combine.hpp"

#include "engine/error.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/functions.hpp"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <vector>

namespace cardsim::numerics {

void combine(std::span<const float> weights, std::span<const float> outputs,
             const std::optional<SharedExpert>& shared, std::span<float> y) {
    const std::size_t k = weights.size(), n = y.size();
    if (outputs.size() != k * n || (shared && shared->out.size() != n))
        throw Error(fmt::format("expert combine: {} weights over {} output values and a shared expert of {} "
                                "into {} columns (expected {} output values{})",
                                k, outputs.size(), shared ? shared->out.size() : 0, n, k * n,
                                shared ? fmt::format(" and {} shared", n) : ""));
    const float g = shared ? sigmoid(shared->gate_logit) : 0.0f;
    bool finite = std::isfinite(g);
    for (float w : weights)
        finite = finite && std::isfinite(w);
    std::vector<Term> terms(k + (shared ? 1 : 0));
    for (std::size_t c = 0; c < n; ++c) {
        bool ok = finite;
        for (std::size_t i = 0; i < k && ok; ++i) {
            const float e = outputs[i * n + c];
            ok = std::isfinite(e);
            if (ok) terms[i] = product(weights[i], e);
        }
        if (ok && shared) {
            ok = std::isfinite(shared->out[c]);
            if (ok) terms[k] = product(g, shared->out[c]);
        }
        y[c] = ok ? window_sum(terms) : std::numeric_limits<float>::quiet_NaN();
    }
}

} // namespace cardsim::numerics
