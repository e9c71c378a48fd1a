#pragma once
// How a row of activations is quantised: the grouping of values under one scale (Block), the rule
// that picks the scale (Scale), and how many words approximate each value.

#include <cstddef>
#include <string>
#include <variant>

namespace cardsim::numerics {

/// A block of a fixed number of consecutive values (the last block of a row may be shorter).
struct Values {
    std::size_t n;
    friend bool operator==(const Values&, const Values&) = default;
};
/// Blocks as long as the weights' scale groups of the matrix the row multiplies.
struct OfTheWeights {
    friend bool operator==(const OfTheWeights&, const OfTheWeights&) = default;
};
/// The whole row (an attention head's query) is one block.
struct Row {
    friend bool operator==(const Row&, const Row&) = default;
};
/// Which values share one scale.
using Block = std::variant<Values, OfTheWeights, Row>;

/// The least power of two 2^e for which every code of the block, round_half_even(x / 2^e), fits in
/// `significand_bits` bits of magnitude: codes are signed, |code| <= 2^significand_bits - 1.
struct LeastPowerOfTwo {
    int significand_bits;
    friend bool operator==(const LeastPowerOfTwo&, const LeastPowerOfTwo&) = default;
};
/// The least power of two for which every code fits in 0..255: unsigned codes of values >= 0
/// (attention weights); a negative value saturates to code 0.
struct LeastPowerOfTwoOver255 {
    friend bool operator==(const LeastPowerOfTwoOver255&, const LeastPowerOfTwoOver255&) = default;
};
/// The rule that picks a block's power-of-two scale.
using Scale = std::variant<LeastPowerOfTwo, LeastPowerOfTwoOver255>;

/// An activation scheme: blocks, their scale rule, and 1 or 2 words (the second word quantises the
/// residual of the first, value - code x 2^e, under its own scale by the same rule).
struct Scheme {
    Block block;
    Scale scale;
    int words = 1;
    friend bool operator==(const Scheme&, const Scheme&) = default;
};

/// Values per activation block under `sub32` scaling.
inline constexpr std::size_t ACT_BLOCK = 32;
/// Significand bits of an activation code under `sub32` scaling (codes -15..15).
inline constexpr int NARROW_BITS = 4;
/// Significand bits of an activation code under `per_block` scaling (codes within +-(2^23 - 1)): an
/// int8 weight times such a code, summed over 32 values, uses 36 bits of an i64.
inline constexpr int WIDE_BITS = 23;

/// The largest code magnitude of a scale rule: 2^significand_bits - 1, or 255.
int max_code(const Scale& s);
/// Whether a scale rule's codes are unsigned (LeastPowerOfTwoOver255).
bool is_unsigned(const Scale& s);

/// The number of values per block of `block` for a row of `length` values multiplying a matrix
/// whose scale groups hold `weights_group` values (used by OfTheWeights). Row gives `length`.
std::size_t block_size(const Block& block, std::size_t length, std::size_t weights_group);

/// `Values(32)`, `OfTheWeights`, `Row`.
std::string to_string(const Block& b);
/// `LeastPowerOfTwo { significand_bits: 4 }`, `LeastPowerOfTwoOver255`.
std::string to_string(const Scale& s);
/// `Scheme { block: Values(32), scale: LeastPowerOfTwo { significand_bits: 4 }, words: 1 }`.
std::string to_string(const Scheme& s);

} // namespace cardsim::numerics
