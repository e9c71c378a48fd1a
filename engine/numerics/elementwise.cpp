#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/elementwise.hpp"

#include "engine/error.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/nan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace cardsim::numerics {
namespace {

void check(std::size_t a, std::size_t b, std::size_t y, const char* what) {
    if (a != b || a != y)
        throw Error(std::string(what) + ": operands of " + std::to_string(a) + " and " + std::to_string(b) +
                    " values into " + std::to_string(y));
}

} // namespace

void add(std::span<const float> a, std::span<const float> b, std::span<float> y) {
    check(a.size(), b.size(), y.size(), "add");
    for (std::size_t j = 0; j < y.size(); ++j)
        y[j] = canonical(a[j] + b[j]);
}

void silu_mul(std::span<const float> g, std::span<const float> u, std::span<float> y) {
    check(g.size(), u.size(), y.size(), "SiLU-mul");
    for (std::size_t j = 0; j < y.size(); ++j)
        y[j] = canonical(silu(g[j]) * u[j]);
}

void gelu_mul(std::span<const float> g, std::span<const float> u, std::span<float> y) {
    check(g.size(), u.size(), y.size(), "GELU-mul");
    for (std::size_t j = 0; j < y.size(); ++j)
        y[j] = canonical(gelu(g[j]) * u[j]);
}

void sigmoid_gate(std::span<const float> x, std::span<const float> g, std::span<float> y) {
    check(x.size(), g.size(), y.size(), "sigmoid gate");
    for (std::size_t j = 0; j < y.size(); ++j)
        y[j] = canonical(x[j] * sigmoid(g[j]));
}

void swiglu_clamp(std::span<const float> g, std::span<const float> u, float limit, float alpha,
                  std::span<float> y) {
    check(g.size(), u.size(), y.size(), "clamped SwiGLU");
    for (std::size_t j = 0; j < y.size(); ++j) {
        const float gate = std::isnan(g[j]) ? g[j] : std::min(g[j], limit);
        const float up = std::isnan(u[j]) ? u[j] : std::min(std::max(u[j], -limit), limit);
        const float glu = gate * sigmoid(alpha * gate);
        y[j] = canonical((up + 1.0f) * glu);
    }
}

std::size_t argmax(std::span<const float> x) {
    if (x.empty()) throw Error("arg-max of no values");
    std::size_t best = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
        if (std::isnan(x[j])) return j;
        if (x[j] > x[best]) best = j;
    }
    return best;
}

} // namespace cardsim::numerics
