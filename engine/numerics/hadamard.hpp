#pragma once
// The normalised Walsh-Hadamard rotation of a head's row, in the f32 domain.
//
// For a row of n = 2^k values (n >= 1) the rotation is the fast transform with a fixed order of
// f32 operations, each rounded once to nearest even:
//   for h = 1, 2, 4, ..., n/2 (in that order), for every i with (i & h) == 0:
//       (x_i, x_{i+h}) <- (x_i + x_{i+h}, x_i - x_{i+h})
//   then y_i = x_i * c with c = rsqrt(n) correctly rounded (exactly 2^(-k/2) when k is even).
// Without rounding this is y = H x / sqrt(n) with H[i][j] = (-1)^popcount(i & j) (Sylvester
// order), an orthogonal symmetric matrix, its own inverse. If any input is inf or NaN, or an
// addition overflows, every output is NaN (an infinity reaches every output of the butterfly).

#include <cstddef>
#include <span>

namespace cardsim::numerics {

/// Rotates `x` in place (x.size() a power of two; throws cardsim::Error otherwise).
void hadamard(std::span<float> x);

/// Rotates each head of `row` (heads of `head_dim` values, a power of two) in place.
void hadamard_heads(std::span<float> row, std::size_t head_dim);

} // namespace cardsim::numerics
