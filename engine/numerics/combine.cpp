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

namespace {

/// Checks the sizes of a combine of `k` weights over `outputs` into `n` columns.
void check_combine_sizes(std::size_t k, std::size_t outputs, const std::optional<SharedExpert>& shared,
                 std::size_t n) {
    if (outputs != k * n || (shared && shared->out.size() != n))
        throw Error(fmt::format("expert combine: {} weights over {} output values and a shared expert of {} "
                                "into {} columns (expected {} output values{})",
                                k, outputs, shared ? shared->out.size() : 0, n, k * n,
                                shared ? fmt::format(" and {} shared", n) : ""));
}

/// Calls `column(c, finite, terms)` with column c's exact products; `finite` is false when the
/// column is NaN (a factor not finite): the combine's terms, shared by its rounded and partial forms.
template <class Column>
void each_column(std::span<const float> weights, std::span<const float> outputs,
                 const std::optional<SharedExpert>& shared, std::size_t n, Column column) {
    const std::size_t k = weights.size();
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
        column(c, ok, std::span<const Term>(terms));
    }
}

} // namespace

void combine(std::span<const float> weights, std::span<const float> outputs,
             const std::optional<SharedExpert>& shared, std::span<float> y) {
    check_combine_sizes(weights.size(), outputs.size(), shared, y.size());
    each_column(weights, outputs, shared, y.size(),
                [&](std::size_t c, bool finite, std::span<const Term> terms) {
                    y[c] = finite ? window_sum(terms) : std::numeric_limits<float>::quiet_NaN();
                });
}

void combine_partial(std::span<const float> weights, std::span<const float> outputs,
                     const std::optional<SharedExpert>& shared, std::span<PartialSum> y) {
    check_combine_sizes(weights.size(), outputs.size(), shared, y.size());
    each_column(weights, outputs, shared, y.size(),
                [&](std::size_t c, bool finite, std::span<const Term> terms) {
                    if (!finite) {
                        y[c] = PartialSum{};
                        y[c].flags = PartialSum::Nan;
                    } else {
                        y[c] = partial_of(terms);
                    }
                });
}

} // namespace cardsim::numerics
