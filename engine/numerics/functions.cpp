// Stages one and two of the correctly rounded functions (see functions.hpp); the formulas are
// written for double and long double alike.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/functions.hpp"

#include "engine/numerics/nan.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace cardsim::numerics {
namespace {

/// The float r rounds to, if every value within r x (1 +- margin) rounds to it.
/// An infinite or zero r decides at once: the exact value is beyond the format's range (the
/// evaluations overflow and underflow only beyond the wider format's range).
template <class T>
bool decided(T r, T margin, float& out) {
    if (std::isinf(r) || r == 0) {
        out = static_cast<float>(r);
        return true;
    }
    const T d = std::fabs(r) * margin;
    const float lo = static_cast<float>(r - d), hi = static_cast<float>(r + d);
    if (std::bit_cast<std::uint32_t>(lo) != std::bit_cast<std::uint32_t>(hi)) return false;
    out = lo;
    return true;
}

template <class T>
T sqrt1_2() {
    return static_cast<T>(0.707106781186547524400844362104849039L);
}

/// f at precision T (x finite and not a special case).
template <class T>
T evaluate(Function f, float xf) {
    const T x = xf;
    switch (f) {
    case Function::Exp:
        return std::exp(x);
    case Function::Sigmoid:
        return T(1) / (T(1) + std::exp(-x));
    case Function::Silu:
        return x / (T(1) + std::exp(-x));
    case Function::Softplus:
        return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    case Function::Rsqrt:
        return T(1) / std::sqrt(x);
    case Function::Sin:
        return std::sin(x);
    case Function::Cos:
        return std::cos(x);
    case Function::Gelu:
        return x / 2 * std::erfc(-x * sqrt1_2<T>());
    }
    return 0;
}

/// The special cases of functions.hpp; true when `out` is set.
bool special(Function f, float x, float& out) {
    if (std::isnan(x)) return out = qnan, true;
    const bool inf = std::isinf(x), neg = std::signbit(x);
    switch (f) {
    case Function::Exp:
        if (inf) return out = neg ? 0.0f : x, true;
        if (x == 0) return out = 1.0f, true;
        return false;
    case Function::Sigmoid:
        if (inf) return out = neg ? 0.0f : 1.0f, true;
        if (x == 0) return out = 0.5f, true;
        return false;
    case Function::Silu:
    case Function::Gelu:
        if (inf) return out = neg ? -0.0f : x, true;
        if (x == 0) return out = x, true;
        return false;
    case Function::Softplus:
        if (inf) return out = neg ? 0.0f : x, true;
        return false;
    case Function::Rsqrt:
        if (x == 0)
            return out =
                       neg ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity(),
                   true;
        if (neg) return out = qnan, true;
        if (inf) return out = 0.0f, true;
        return false;
    case Function::Sin:
        if (inf) return out = qnan, true;
        if (x == 0) return out = x, true;
        return false;
    case Function::Cos:
        if (inf) return out = qnan, true;
        if (x == 0) return out = 1.0f, true;
        return false;
    }
    return false;
}

float correctly_rounded(Function f, float x) {
    float out = 0;
    if (special(f, x, out)) return out;
    const double margin = f == Function::Gelu ? 0x1p-36 : 0x1p-40;
    if (decided(evaluate<double>(f, x), margin, out)) return out;
    if (decided(evaluate<long double>(f, x),
                static_cast<long double>(f == Function::Gelu ? 0x1p-48 : 0x1p-52), out))
        return out;
    return detail::multiprecision(f, x);
}

} // namespace

float exp(float x) {
    return correctly_rounded(Function::Exp, x);
}
float sigmoid(float x) {
    return correctly_rounded(Function::Sigmoid, x);
}
float silu(float x) {
    return correctly_rounded(Function::Silu, x);
}
float softplus(float x) {
    return correctly_rounded(Function::Softplus, x);
}
float rsqrt(float x) {
    return correctly_rounded(Function::Rsqrt, x);
}
float sin(float x) {
    return correctly_rounded(Function::Sin, x);
}
float cos(float x) {
    return correctly_rounded(Function::Cos, x);
}
float gelu(float x) {
    return correctly_rounded(Function::Gelu, x);
}

std::string_view name(Function f) {
    switch (f) {
    case Function::Exp:
        return "exp";
    case Function::Sigmoid:
        return "sigmoid";
    case Function::Silu:
        return "silu";
    case Function::Softplus:
        return "softplus";
    case Function::Rsqrt:
        return "rsqrt";
    case Function::Sin:
        return "sin";
    case Function::Cos:
        return "cos";
    case Function::Gelu:
        return "gelu";
    }
    return "?";
}

float apply(Function f, float x) {
    return correctly_rounded(f, x);
}

float inverse_frequency(int i, int d, double theta) {
    float out = 0;
    if (decided(std::pow(theta, -2.0 * i / d), 0x1p-40, out)) return out;
    const long double e = -2.0L * i / d;
    if (decided(std::pow(static_cast<long double>(theta), e), static_cast<long double>(0x1p-52), out))
        return out;
    return detail::multiprecision_inverse_frequency(i, d, theta);
}

} // namespace cardsim::numerics
