#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/router.hpp"

#include "engine/error.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/functions.hpp"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <vector>

namespace cardsim::numerics {

std::string_view name(RouterNorm n) {
    return n == RouterNorm::TopK ? "topk" : "all";
}

void route(std::span<const float> logits, RouterNorm norm, std::span<std::uint32_t> experts,
           std::span<float> weights) {
    const std::size_t E = logits.size(), k = experts.size();
    if (k == 0 || k > E || weights.size() != k)
        throw Error(fmt::format("router: {} experts chosen of {} logits into {} weights (expected 1 .. {} "
                                "experts and a weight each)",
                                k, E, weights.size(), E));
    for (float z : logits)
        if (!std::isfinite(z)) {
            for (std::size_t i = 0; i < k; ++i) {
                experts[i] = static_cast<std::uint32_t>(i);
                weights[i] = std::numeric_limits<float>::quiet_NaN();
            }
            return;
        }
    // Scanning in index order, a later expert passes a chosen one only with a strictly larger
    // logit: ties stay with the lower index.
    std::size_t chosen = 0;
    for (std::size_t e = 0; e < E; ++e) {
        const float z = logits[e];
        if (chosen == k && !(z > logits[experts[k - 1]])) continue;
        std::size_t at = chosen < k ? chosen++ : k - 1;
        while (at > 0 && z > logits[experts[at - 1]]) {
            experts[at] = experts[at - 1];
            --at;
        }
        experts[at] = static_cast<std::uint32_t>(e);
    }
    const float m = logits[experts[0]];
    std::vector<Term> terms;
    if (norm == RouterNorm::TopK) {
        terms.resize(k);
        for (std::size_t i = 0; i < k; ++i) {
            weights[i] = numerics::exp(logits[experts[i]] - m);
            terms[i] = term(weights[i]);
        }
    } else {
        terms.resize(E);
        for (std::size_t e = 0; e < E; ++e)
            terms[e] = term(numerics::exp(logits[e] - m));
        for (std::size_t i = 0; i < k; ++i)
            weights[i] = numerics::exp(logits[experts[i]] - m);
    }
    const float sum = window_sum(terms);
    for (std::size_t i = 0; i < k; ++i)
        weights[i] = weights[i] / sum;
}

} // namespace cardsim::numerics
