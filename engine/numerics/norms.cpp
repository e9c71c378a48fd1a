#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/norms.hpp"

#include "engine/error.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/nan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cardsim::numerics {
namespace {

/// window_sum of x_j * x_j.
float sum_of_squares(std::span<const float> x, std::vector<Term>& terms) {
    terms.resize(x.size());
    for (std::size_t j = 0; j < x.size(); ++j)
        terms[j] = product(x[j], x[j]);
    return window_sum(terms);
}

void check_sizes(std::size_t x, std::size_t y, std::size_t group, const char* what) {
    if (group == 0 || x % group != 0 || y != x)
        throw Error(std::string(what) + ": " + std::to_string(x) + " values in groups of " +
                    std::to_string(group) + " into " + std::to_string(y) + " outputs");
}

} // namespace

void rms_norm(std::span<const float> x, std::span<const float> w, float eps, NormWeight kind,
              std::span<float> y) {
    const std::size_t g = w.size();
    check_sizes(x.size(), y.size(), g, "RMSNorm");
    std::vector<Term> terms;
    for (std::size_t h = 0; h < x.size(); h += g) {
        auto xs = x.subspan(h, g);
        auto ys = y.subspan(h, g);
        if (!finite(xs)) {
            std::fill(ys.begin(), ys.end(), qnan);
            continue;
        }
        const float r = rsqrt(sum_of_squares(xs, terms) / static_cast<float>(g) + eps);
        for (std::size_t j = 0; j < g; ++j)
            ys[j] = canonical((xs[j] * r) * (kind == NormWeight::ZeroCentred ? 1.0f + w[j] : w[j]));
    }
}

void layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b, float eps,
                std::span<float> y) {
    const std::size_t n = x.size();
    check_sizes(n, y.size(), w.size(), "LayerNorm");
    if (w.size() != n || (!b.empty() && b.size() != n))
        throw Error("LayerNorm: " + std::to_string(n) + " values take " + std::to_string(n) +
                    " weights and biases");
    if (!finite(x)) {
        std::fill(y.begin(), y.end(), qnan);
        return;
    }
    std::vector<Term> terms(n);
    for (std::size_t j = 0; j < n; ++j)
        terms[j] = term(x[j]);
    const float mean = window_sum(terms) / static_cast<float>(n);
    std::vector<float> d(n);
    for (std::size_t j = 0; j < n; ++j)
        d[j] = x[j] - mean;
    if (!finite(d)) { // the mean overflowed
        std::fill(y.begin(), y.end(), qnan);
        return;
    }
    const float r = rsqrt(sum_of_squares(d, terms) / static_cast<float>(n) + eps);
    for (std::size_t j = 0; j < n; ++j) {
        y[j] = (d[j] * r) * w[j];
        if (!b.empty()) y[j] = y[j] + b[j];
        y[j] = canonical(y[j]);
    }
}

void l2_norm(std::span<const float> x, std::size_t group, float eps, float scale, std::span<float> y) {
    check_sizes(x.size(), y.size(), group, "L2 norm");
    std::vector<Term> terms;
    for (std::size_t h = 0; h < x.size(); h += group) {
        auto xs = x.subspan(h, group);
        auto ys = y.subspan(h, group);
        if (!finite(xs)) {
            std::fill(ys.begin(), ys.end(), qnan);
            continue;
        }
        const float r = rsqrt(sum_of_squares(xs, terms) + eps);
        for (std::size_t j = 0; j < group; ++j)
            ys[j] = canonical((xs[j] * r) * scale);
    }
}

} // namespace cardsim::numerics
