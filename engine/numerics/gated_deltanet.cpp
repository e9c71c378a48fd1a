#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/gated_deltanet.hpp"

#include "engine/error.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/nan.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cardsim::numerics {

void gdn_gates(std::span<const float> a, std::span<const float> b, std::span<const float> a_log,
               std::span<const float> dt_bias, std::span<float> beta, std::span<float> g) {
    const std::size_t n = a.size();
    if (b.size() != n || a_log.size() != n || dt_bias.size() != n || beta.size() != n || g.size() != n)
        throw Error("Gated-DeltaNet gates: every operand takes " + std::to_string(n) +
                    " values (one per value head)");
    for (std::size_t h = 0; h < n; ++h) {
        beta[h] = sigmoid(b[h]);
        g[h] = -(exp(a_log[h]) * softplus(a[h] + dt_bias[h]));
        if (std::isnan(g[h])) g[h] = qnan;
    }
}

void delta_rule_step(std::span<float> S, std::span<const float> q, std::span<const float> k,
                     std::span<const float> v, float g, float beta, Keep keep, std::span<float> o) {
    const std::size_t dk = k.size(), dv = v.size();
    if (q.size() != dk || S.size() != dk * dv || o.size() != dv)
        throw Error("delta rule: a " + std::to_string(dk) + " x " + std::to_string(dv) +
                    " state takes q and k of " + std::to_string(dk) + " values, v and o of " +
                    std::to_string(dv));
    auto fail = [&] {
        std::fill(S.begin(), S.end(), qnan);
        std::fill(o.begin(), o.end(), qnan);
    };
    if (!finite(S) || !finite(q) || !finite(k) || !finite(v) || !std::isfinite(g) || !std::isfinite(beta))
        return fail();
    const float decay = exp(g);
    for (float& s : S)
        s = s * decay;
    if (!finite(S)) return fail(); // the decay overflowed
    std::vector<float> delta(dv);
    window_sums_of_columns(S, dk, dv, k, delta); // kv_j
    for (std::size_t j = 0; j < dv; ++j) {
        delta[j] = beta * (v[j] - delta[j]);
        if (std::isnan(delta[j])) delta[j] = qnan;
    }
    for (std::size_t i = 0; i < dk; ++i)
        for (std::size_t j = 0; j < dv; ++j)
            S[i * dv + j] = S[i * dv + j] + k[i] * delta[j];
    if (!finite(S) || !finite(delta)) return fail();
    window_sums_of_columns(S, dk, dv, q, o);
    keep_values(S, keep);
}

void gated_rms_norm(std::span<const float> x, std::span<const float> z, std::span<const float> w, float eps,
                    std::span<float> y) {
    const std::size_t n = w.size();
    if (n == 0 || x.size() % n != 0 || z.size() != x.size() || y.size() != x.size())
        throw Error("gated RMSNorm: " + std::to_string(x.size()) + " values and gates in heads of " +
                    std::to_string(n));
    std::vector<Term> terms(n);
    for (std::size_t h = 0; h < x.size(); h += n) {
        auto xs = x.subspan(h, n);
        if (!finite(xs)) {
            std::fill(y.begin() + static_cast<std::ptrdiff_t>(h),
                      y.begin() + static_cast<std::ptrdiff_t>(h + n), qnan);
            continue;
        }
        for (std::size_t j = 0; j < n; ++j)
            terms[j] = product(xs[j], xs[j]);
        const float r = rsqrt(window_sum(terms) / static_cast<float>(n) + eps);
        for (std::size_t j = 0; j < n; ++j) {
            const float v = (w[j] * (xs[j] * r)) * silu(z[h + j]);
            y[h + j] = std::isnan(v) ? qnan : v;
        }
    }
}

} // namespace cardsim::numerics
