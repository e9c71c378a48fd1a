#pragma once
// The nonlinear functions of the card's units, each defined as the exact real function rounded
// once to f32 (round to nearest, ties to even): the correctly rounded result, worst-case error
// 0.5 ulp, the same bits on any implementation that meets the definition.
//
// A circuit implements a correctly rounded function by evaluating with enough extra precision and
// a rounding test. This library does it in three stages: a double evaluation with an error bound
// far below the test's margin (2^-40 relative, 2^-36 for GELU) decides unless the result lies
// within that margin of a rounding boundary (about 1 input in 30000); then a long double evaluation
// (margin 2^-52); then a 332-bit (100 digit) Boost.Multiprecision evaluation. The exhaustive sweep
// (`cardsim numerics --sweep FUNCTION`) holds every f32 input to an independent reference.
//
// Special values: NaN in gives the quiet NaN 0x7FC00000 out. exp(+-inf) = +inf, +0; sigmoid
// = 1, +0; silu = +inf, -0; softplus = +inf, +0; gelu = +inf, -0; sin/cos(+-inf) = NaN;
// rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(x < 0) = NaN, rsqrt(+inf) = +0. Odd functions keep the
// sign of zero (silu(-0) = sin(-0) = gelu(-0) = -0); results that underflow keep their sign.
//
// Inside namespace cardsim::numerics these names hide <cmath>'s float overloads: write std::exp
// for the C library's function.

#include <string_view>

namespace cardsim::numerics {

/// e^x.
float exp(float x);
/// 1 / (1 + e^-x).
float sigmoid(float x);
/// x * sigmoid(x) = x / (1 + e^-x), rounded once.
float silu(float x);
/// ln(1 + e^x), rounded once (no threshold: for large x it rounds to x by itself).
float softplus(float x);
/// 1 / sqrt(x).
float rsqrt(float x);
/// sin(x), x in radians, for every f32 x (exact argument reduction).
float sin(float x);
/// cos(x), x in radians, for every f32 x.
float cos(float x);
/// x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)), the exact (erf) GELU, rounded once.
float gelu(float x);

/// The functions above, by name, for sweeps and tables.
enum class Function { Exp, Sigmoid, Silu, Softplus, Rsqrt, Sin, Cos, Gelu };
inline constexpr Function all_functions[] = {Function::Exp,      Function::Sigmoid, Function::Silu,
                                             Function::Softplus, Function::Rsqrt,   Function::Sin,
                                             Function::Cos,      Function::Gelu};

/// `exp`, `sigmoid`, `silu`, `softplus`, `rsqrt`, `sin`, `cos`, `gelu`.
std::string_view name(Function f);
/// f(x).
float apply(Function f, float x);

/// theta^(-2i / d) rounded once to f32: the inverse frequency of rotation pair i of a rotary
/// dimension d (0 <= 2i < d) with base theta (> 0, finite).
float inverse_frequency(int i, int d, double theta);

namespace detail {
/// The third stage: f(x) at 332 bits, rounded once to f32 (functions_mp.cpp).
float multiprecision(Function f, float x);
/// The third stage of inverse_frequency.
float multiprecision_inverse_frequency(int i, int d, double theta);
} // namespace detail

} // namespace cardsim::numerics
