#pragma once
// The card's accumulator: a sum of scaled integer terms, exact in a 64-place fixed-point window
// over an i128, rounded once to f32.
//
// The rule, for terms t_i = d_i x 2^s_i (d_i an integer, s_i its exponent):
// - H is the place just above the largest term's top bit: H = max over d_i != 0 of
//   s_i + bit_length(|d_i|). The window is the 64 places [L, H) with L = H - 64.
// - every term is truncated toward zero to a multiple of 2^L (its bits below the window are
//   dropped; a term wholly below the window contributes 0), then the truncated terms are added
//   exactly (an i128 holds 2^63 of them without overflow).
// - the sum, an integer times 2^L, is rounded once to f32, nearest even (subnormals kept, overflow
//   to infinity); a zero sum (no nonzero term, or exact cancellation) is +0.
// So the result never depends on the order of the terms. It is the correctly rounded exact sum
// whenever every term lies inside the window (every s_i >= L); otherwise the error is less than
// (number of terms truncated) x 2^L, i.e. below n x 2^-63 of the largest term.

#include "engine/numerics/rounding.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::numerics {

/// Places of the accumulator window below the top of the largest term.
inline constexpr int WINDOW_PLACES = 64;
/// Bits of the accumulator register the window lives in.
inline constexpr int ACCUMULATOR_BITS = 128;

/// One term of an exact sum: significand x 2^exponent.
struct Term {
    std::int64_t significand;
    int exponent;
};

/// The sum of `terms` under the window rule above, rounded once to f32.
float window_sum(std::span<const Term> terms);

/// out[j] = window_sum over i of product(m[i * cols + j], x[i]), for each of the `cols` columns of
/// the row-major `rows` x cols matrix `m` (x.size() == rows, finite values): the same bits as
/// building each column's terms, computed in row-major sweeps (a matrix-vector product's columns).
void window_sums_of_columns(std::span<const float> m, std::size_t rows, std::size_t cols,
                            std::span<const float> x, std::span<float> out);

/// The exact product of two finite floats as a term (|significand| < 2^48). Inline, as dyadic.
inline Term product(float a, float b) {
    const Dyadic x = dyadic(a), y = dyadic(b);
    const auto m = static_cast<std::int64_t>(static_cast<std::uint64_t>(x.significand) * y.significand);
    return {x.negative != y.negative ? -m : m, x.exponent + y.exponent};
}

/// The place just above a nonzero term's top bit: exponent + bit length of |significand|.
inline int top_of(const Term& t) {
    const auto m =
        static_cast<std::uint64_t>(t.significand < 0 ? -static_cast<unsigned __int128>(t.significand)
                                                     : static_cast<unsigned __int128>(t.significand));
    return t.exponent + bit_length(m);
}

/// A finite float as a term (|significand| < 2^24).
inline Term term(float x) {
    const Dyadic d = dyadic(x);
    const auto m = static_cast<std::int64_t>(d.significand);
    return {d.negative ? -m : m, d.exponent};
}

} // namespace cardsim::numerics
