#pragma once
// The 16-bit float formats the card stores: IEEE binary16 (f16) and bfloat16 (bf16), and their
// conversions to and from f32.
//
// Rules (both formats): f32 -> 16 bits rounds to nearest, ties to even, keeps subnormals, overflows
// to infinity of the same sign, and keeps the sign of zero. A NaN stays a NaN: sign kept, quiet bit
// set, the top payload bits kept (the low ones dropped), so a NaN never becomes infinity or a
// number. 16 bits -> f32 is exact; a NaN gets its quiet bit set and keeps sign and payload.

#include <cstdint>

namespace cardsim::numerics {

/// An IEEE binary16 value, as its bit pattern.
struct F16 {
    std::uint16_t bits = 0;
    friend bool operator==(const F16&, const F16&) = default;
};

/// A bfloat16 value, as its bit pattern (the top half of an f32).
struct BF16 {
    std::uint16_t bits = 0;
    friend bool operator==(const BF16&, const BF16&) = default;
};

/// The largest finite f16, 65504.
inline constexpr F16 f16_max{0x7BFF};
/// The canonical quiet f16 NaN the card writes for a value it has no number for.
inline constexpr F16 f16_nan{0x7E00};

/// `x` rounded to f16 (rules above).
F16 to_f16(float x);
/// `x` rounded once to f16 (rules above; used where the exact value is a double).
F16 f16_from_double(double x);
/// The exact f32 value of `h`.
float to_f32(F16 h);

/// `x` rounded to bf16 (rules above).
BF16 to_bf16(float x);
/// The exact f32 value of `h`.
float to_f32(BF16 h);

/// Whether `h` is a NaN.
constexpr bool is_nan(F16 h) {
    return (h.bits & 0x7C00) == 0x7C00 && (h.bits & 0x03FF) != 0;
}
/// Whether `h` is an infinity or a NaN.
constexpr bool is_nonfinite(F16 h) {
    return (h.bits & 0x7C00) == 0x7C00;
}

/// A finite f16 as significand x 2^exponent: |significand| < 2^11 (sign included), exponent
/// >= -24. Normal numbers have significand 1024 + fraction and exponent field - 25; subnormals
/// fraction and -24. Zero is {0, -24}.
struct F16Parts {
    std::int32_t significand;
    int exponent;
};

/// The exact parts of a finite f16 (`h` must not be inf or NaN).
F16Parts parts(F16 h);

} // namespace cardsim::numerics
