#pragma once
// The spec path's exact numbers: rationals and integers of Boost.Multiprecision, the exact values of
// the card's float formats read from their bit patterns, and rounding a rational to a format.
//
// The spec path (engine/numerics/spec/) is written straight from the contract with exact
// arithmetic. It shares nothing with the fast path beyond the format definitions (BinaryFormat,
// F16/BF16, the scheme and weight-format types): it has its own decoders and its own rounding.

#include "engine/numerics/half.hpp"
#include "engine/numerics/rounding.hpp"

#include <boost/multiprecision/cpp_int.hpp>

#include <cstdint>

namespace cardsim::numerics::spec {

using Integer = boost::multiprecision::cpp_int;
using Rational = boost::multiprecision::cpp_rational;

/// 2^e exactly, for any integer e.
Rational power_of_two(int e);

/// The exact value of a finite f32 bit pattern; `bits` must not encode inf or NaN.
Rational value_of_f32(std::uint32_t bits);
/// The exact value of a finite float.
Rational value(float x);
/// The exact value of a finite f16.
Rational value(F16 h);
/// The exact value of a finite bf16.
Rational value(BF16 h);

/// The largest integer <= q.
Integer floor(const Rational& q);
/// q rounded to the nearest integer, ties to even.
Integer round_half_even(const Rational& q);
/// The integer e with 2^e <= |q| < 2^(e+1); q must not be zero.
int floor_log2(const Rational& q);

/// The encoding of q rounded to nearest, ties to even, in `format` (subnormals kept, overflow to
/// infinity; zero is +0). Written independently of the fast path's rounding.
std::uint32_t round_to_format(const Rational& q, BinaryFormat format);
/// q rounded to f32 (round_to_format in binary32).
float round_to_f32(const Rational& q);

/// f32 arithmetic as IEEE 754 defines it: the exact result of one operation rounded once, with the
/// standard's rules for infinities, NaNs (the quiet NaN 0x7FC00000 out) and the sign of zero.
float add(float a, float b);
float sub(float a, float b);
float mul(float a, float b);
float div(float a, float b);

} // namespace cardsim::numerics::spec
