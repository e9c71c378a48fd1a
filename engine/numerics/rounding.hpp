#pragma once
// Rounding an exact dyadic value (an integer times a power of two) to a binary floating-point
// format, round to nearest, ties to even: the one rounding every unit of the card does.

#include <bit>
#include <cstdint>

namespace cardsim::numerics {

/// An IEEE 754 style binary format: `precision` significand bits counting the implicit leading one,
/// normal exponents in [min_exponent, max_exponent], and `exponent_bits` bits of biased exponent in
/// the encoding (sign, exponent field, fraction field of precision - 1 bits).
struct BinaryFormat {
    int precision;
    int min_exponent;
    int max_exponent;
    int exponent_bits;
    friend bool operator==(const BinaryFormat&, const BinaryFormat&) = default;
};

/// IEEE binary16 (half): 11 bits of precision, exponents -14..15.
inline constexpr BinaryFormat binary16{11, -14, 15, 5};
/// bfloat16: f32's exponent range with 8 bits of precision.
inline constexpr BinaryFormat bfloat16{8, -126, 127, 8};
/// IEEE binary32 (float).
inline constexpr BinaryFormat binary32{24, -126, 127, 8};

/// The encoding of (-1)^negative x magnitude x 2^exponent in `format`, rounded to nearest with ties
/// to even. Subnormals are kept (gradual underflow); a value from the overflow threshold
/// (2^(max_exponent+1) - 2^(max_exponent-precision)) up becomes infinity; a zero magnitude gives a
/// zero of that sign. The encoding occupies the low 1 + exponent_bits + precision - 1 bits.
std::uint32_t round_to_format(bool negative, unsigned __int128 magnitude, int exponent, BinaryFormat format);

/// round_to_format in binary32, as a float.
float round_to_f32(bool negative, unsigned __int128 magnitude, int exponent);

/// A finite float as an exact dyadic value: value = (-1)^negative x significand x 2^exponent with
/// significand < 2^24 (the f32 integer significand, implicit bit included for normal numbers) and
/// exponent the place of its last bit (>= -149).
struct Dyadic {
    bool negative;
    std::uint32_t significand;
    int exponent;
};

/// The exact dyadic value of a finite float (`x` must not be inf or NaN). Inline: the exact sums
/// call it per term, and a call returning the struct through memory costs more than the bits.
inline Dyadic dyadic(float x) {
    const auto u = std::bit_cast<std::uint32_t>(x);
    const bool negative = (u >> 31) != 0;
    const int field = static_cast<int>((u >> 23) & 0xFF);
    const std::uint32_t fraction = u & 0x7FFFFF;
    if (field == 0) return {negative, fraction, -149};
    return {negative, fraction | 0x800000, field - 150};
}

/// The number of bits of `v` (0 for 0): the position of its highest set bit plus one.
inline int bit_length(unsigned __int128 v) {
    const auto hi = static_cast<std::uint64_t>(v >> 64);
    if (hi != 0) return 128 - std::countl_zero(hi);
    return 64 - std::countl_zero(static_cast<std::uint64_t>(v));
}

} // namespace cardsim::numerics
