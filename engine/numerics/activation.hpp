#pragma once
// Quantising a row of activations under a Scheme: integer codes and one power-of-two exponent per
// block (and per word).
//
// The rules, for a block of values x_j and a scale rule with largest code M (scheme.hpp):
// - the exponent e is the least integer with round_half_even(amax / 2^e) <= M, amax = max |x_j|;
//   codes are c_j = round_half_even(x_j / 2^e) saturated to [-M, M] (to [0, M] when unsigned: a
//   negative value gives 0). With that e no code ever needs the saturation; it is the rule of the
//   code function, kept so a code is always in range.
// - one word approximates x_j by c_j 2^e with error <= 2^(e-1) <= amax / (M + 1/2);
// - a second word quantises the residual r_j = x_j - c_j 2^e (exact: it is itself an f32) by the same
//   rule under its own exponent, so x_j ~ c1_j 2^e1 + c2_j 2^e2 with error <= 2^(e2-1).
// - a zero block (every value +0 or -0, or a zero residual) has exponent 0 and all codes 0; the sign
//   of zero is not kept.
// - subnormal values are quantised like any other (no flush to zero): e goes as low as the block
//   needs, down to -149 - (significand bits - 1).
// - a block holding a NaN or an infinity is flagged NonFinite: its codes are 0 and exponents 0 in
//   both words, and everything computed from it (dequantised values, dots, sums) is NaN. A NaN or
//   an infinity never becomes a finite code.

#include "engine/numerics/scheme.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::numerics {

/// Whether a block's values were all finite, or held a NaN or an infinity.
enum class BlockState : std::uint8_t { Finite, NonFinite };

/// The exponent a zero block gets.
inline constexpr int ZERO_BLOCK_EXPONENT = 0;

/// A quantised row: `words` words of `length` codes each and one exponent per block and word.
/// The value of word w at j is code(w, j) x 2^exponent(w, block j / block).
struct QuantizedActivation {
    std::size_t length = 0;   ///< values in the row
    std::size_t block = 1;    ///< values per block; the last block may be shorter
    int words = 1;            ///< 1 or 2
    int significand_bits = 0; ///< of the codes (8 for LeastPowerOfTwoOver255)
    bool unsigned_codes = false;
    std::vector<std::int32_t> codes;     ///< word-major: word w's code of value j at w * length + j
    std::vector<std::int16_t> exponents; ///< word-major: word w's exponent of block b at w * blocks() + b
    std::vector<BlockState> states;      ///< one per block (shared by both words)

    /// The number of blocks, ceil(length / block).
    std::size_t blocks() const { return (length + block - 1) / block; }
    /// Word w's code of value j.
    std::int32_t code(int w, std::size_t j) const { return codes[w * length + j]; }
    /// Word w's exponent of block b.
    int exponent(int w, std::size_t b) const { return exponents[w * blocks() + b]; }
    /// Whether block b is NonFinite.
    bool nonfinite(std::size_t b) const { return states[b] == BlockState::NonFinite; }
};

/// Quantises `row` under `scheme`; `weights_group` is the scale group of the matrix the row will
/// multiply (the block of OfTheWeights). Throws cardsim::Error when the scheme is malformed
/// (significand bits outside 1..24, words other than 1 or 2, an unsigned scheme with two words, a
/// block of 0 values).
QuantizedActivation quantize(std::span<const float> row, const Scheme& scheme,
                             std::size_t weights_group = ACT_BLOCK);

/// The values a quantised row stands for: the exact sum of its words rounded once to f32 (exact
/// with one word); NaN throughout a NonFinite block.
std::vector<float> dequantize(const QuantizedActivation& q);

/// Checks a scheme for `quantize` (the rules above), throwing cardsim::Error naming what is wrong.
void check(const Scheme& scheme);

} // namespace cardsim::numerics
