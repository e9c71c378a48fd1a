#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/spec/functions.hpp"

#include "engine/numerics/nan.hpp"
#include "engine/numerics/spec/exact.hpp"

#include <boost/math/special_functions/erf.hpp>
#include <boost/multiprecision/cpp_bin_float.hpp>

#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

namespace cardsim::numerics::spec {
namespace {

using Big = boost::multiprecision::cpp_bin_float_100;
std::atomic<unsigned long long> hard_cases{0};

constexpr float inf = std::numeric_limits<float>::infinity();

/// The special values, written from the table in functions.hpp.
bool special(Function f, float x, float& out) {
    if (std::isnan(x)) {
        out = qnan;
        return true;
    }
    const bool neg = std::signbit(x);
    if (std::isinf(x)) {
        switch (f) {
        case Function::Exp:
            out = neg ? 0.0f : inf;
            break;
        case Function::Sigmoid:
            out = neg ? 0.0f : 1.0f;
            break;
        case Function::Silu:
            out = neg ? -0.0f : inf;
            break;
        case Function::Softplus:
            out = neg ? 0.0f : inf;
            break;
        case Function::Rsqrt:
            out = neg ? qnan : 0.0f;
            break;
        case Function::Sin:
            out = qnan;
            break;
        case Function::Cos:
            out = qnan;
            break;
        case Function::Gelu:
            out = neg ? -0.0f : inf;
            break;
        }
        return true;
    }
    if (f == Function::Rsqrt && (x < 0 || x == 0)) {
        out = x == 0 ? (neg ? -inf : inf) : qnan;
        return true;
    }
    if (x == 0) {
        switch (f) {
        case Function::Exp:
            out = 1.0f;
            return true;
        case Function::Sigmoid:
            out = 0.5f;
            return true;
        case Function::Cos:
            out = 1.0f;
            return true;
        case Function::Silu:
        case Function::Sin:
        case Function::Gelu:
            out = x;
            return true; // odd: keeps the sign of zero
        default:
            return false;
        }
    }
    return false;
}

/// f(x) in long double, formulas chosen independently of the fast path where there is a choice.
long double wide(Function f, long double x) {
    switch (f) {
    case Function::Exp:
        return expl(x);
    case Function::Sigmoid:
        return x < 0 ? expl(x) / (1 + expl(x)) : 1 / (1 + expl(-x));
    case Function::Silu:
        return x < 0 ? x * expl(x) / (1 + expl(x)) : x / (1 + expl(-x));
    case Function::Softplus:
        return (x > 0 ? x : 0) + log1pl(expl(-fabsl(x)));
    case Function::Rsqrt:
        return 1 / sqrtl(x);
    case Function::Sin:
        return sinl(x);
    case Function::Cos:
        return cosl(x);
    case Function::Gelu:
        return x >= 0 ? x / 2 * (1 + erfl(x / sqrtl(2))) : x / 2 * erfcl(-x / sqrtl(2));
    }
    return 0;
}

Big exact(Function f, const Big& x) {
    using boost::multiprecision::exp;
    switch (f) {
    case Function::Exp:
        return exp(x);
    case Function::Sigmoid:
        return x < 0 ? Big(exp(x) / (1 + exp(x))) : Big(1 / (1 + exp(-x)));
    case Function::Silu:
        return x < 0 ? Big(x * exp(x) / (1 + exp(x))) : Big(x / (1 + exp(-x)));
    case Function::Softplus:
        return (x > 0 ? x : Big(0)) + log(1 + exp(-abs(x)));
    case Function::Rsqrt:
        return 1 / sqrt(x);
    case Function::Sin:
        return sin(x);
    case Function::Cos:
        return cos(x);
    case Function::Gelu:
        return x >= 0 ? Big(x / 2 * (1 + boost::math::erf(x / sqrt(Big(2)))))
                      : Big(x / 2 * boost::math::erfc(-x / sqrt(Big(2))));
    }
    return 0;
}

/// The float v rounds to when every value within v (1 +- margin) rounds to it.
bool decided(long double v, long double margin, float& out) {
    if (std::isinf(v) || v == 0) { // beyond the range of long double: beyond f32's
        out = static_cast<float>(v);
        return true;
    }
    const long double d = fabsl(v) * margin;
    const float lo = static_cast<float>(v - d), hi = static_cast<float>(v + d);
    if (std::bit_cast<std::uint32_t>(lo) != std::bit_cast<std::uint32_t>(hi)) return false;
    out = lo;
    return true;
}

float round_big(const Big& v) {
    ++hard_cases;
    if (v == 0) return 0.0f;
    // A binary float converts exactly to a rational: significand x 2^exponent.
    int e = 0;
    Big m = frexp(v, &e); // v = m 2^e, |m| in [0.5, 1)
    Big scaled = ldexp(m, 400);
    Integer n = scaled.convert_to<Integer>(); // exact: 332 bits of significand < 400
    return round_to_f32(Rational(n) * power_of_two(e - 400));
}

} // namespace

float reference(Function f, float x) {
    float out = 0;
    if (special(f, x, out)) return out;
    if (decided(wide(f, x), static_cast<long double>(0x1p-50), out)) return out;
    return round_big(exact(f, Big(x)));
}

float reference_inverse_frequency(int i, int d, double theta) {
    float out = 0;
    const long double v = expl(-2.0L * i / d * logl(static_cast<long double>(theta)));
    if (decided(v, static_cast<long double>(0x1p-50), out)) return out;
    return round_big(exp(Big(-2 * i) / d * log(Big(theta))));
}

unsigned long long reference_hard_cases() {
    return hard_cases.load();
}

} // namespace cardsim::numerics::spec
