#include "engine/numerics/spec/exact.hpp"

#include "engine/numerics/nan.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace cardsim::numerics::spec {

Rational power_of_two(int e) {
    Integer one = 1;
    if (e >= 0) return Rational(one << e);
    return Rational(one, one << -e);
}

namespace {

/// The value of a finite IEEE-style pattern with the given field widths, by the textbook formula
/// (-1)^s x 2^(field - bias) x (1 + fraction / 2^fraction_bits), subnormals 2^(1 - bias) x 0.fraction.
Rational decode(std::uint32_t bits, int fraction_bits, int exponent_bits) {
    const bool negative = (bits >> (fraction_bits + exponent_bits)) & 1;
    const int field = static_cast<int>((bits >> fraction_bits) & ((1u << exponent_bits) - 1));
    const std::uint32_t fraction = bits & ((1u << fraction_bits) - 1);
    const int bias = (1 << (exponent_bits - 1)) - 1;
    Rational f = Rational(Integer(fraction)) / power_of_two(fraction_bits);
    Rational v = field == 0 ? f * power_of_two(1 - bias) : (1 + f) * power_of_two(field - bias);
    return negative ? Rational(-v) : v;
}

} // namespace

Rational value_of_f32(std::uint32_t bits) {
    return decode(bits, 23, 8);
}
Rational value(float x) {
    return value_of_f32(std::bit_cast<std::uint32_t>(x));
}
Rational value(F16 h) {
    return decode(h.bits, 10, 5);
}
Rational value(BF16 h) {
    return decode(h.bits, 7, 8);
}

Integer floor(const Rational& q) {
    Integer n = numerator(q), d = denominator(q); // d > 0
    Integer t = n / d;                            // truncates toward zero
    if (t * d > n) --t;
    return t;
}

Integer round_half_even(const Rational& q) {
    Integer f = floor(q);
    Rational rest = q - Rational(f);
    const Rational half(1, 2);
    if (rest > half || (rest == half && (f & 1) != 0)) ++f;
    return f;
}

int floor_log2(const Rational& q) {
    Rational a = q < 0 ? Rational(-q) : q;
    // Start from the bit lengths of numerator and denominator, then step to the exact place.
    int e = static_cast<int>(msb(numerator(a))) - static_cast<int>(msb(denominator(a)));
    while (power_of_two(e) > a)
        --e;
    while (power_of_two(e + 1) <= a)
        ++e;
    return e;
}

std::uint32_t round_to_format(const Rational& q, BinaryFormat f) {
    if (q == 0) return 0;
    const bool negative = q < 0;
    const Rational a = negative ? Rational(-q) : q;
    const int fraction_bits = f.precision - 1;
    const std::uint32_t sign = negative ? 1u << (f.exponent_bits + fraction_bits) : 0u;
    const std::uint32_t inf = ((1u << f.exponent_bits) - 1) << fraction_bits;
    int e = floor_log2(a);
    if (e < f.min_exponent) e = f.min_exponent;
    // The grid of representable numbers around a has spacing 2^(e - fraction_bits).
    Integer k = round_half_even(a / power_of_two(e - fraction_bits));
    Rational rounded = Rational(k) * power_of_two(e - fraction_bits);
    if (rounded == 0) return sign;
    if (rounded >= power_of_two(f.max_exponent + 1)) return sign | inf;
    const int bias = (1 << (f.exponent_bits - 1)) - 1;
    if (rounded < power_of_two(f.min_exponent)) // subnormal: k counts steps of 2^(min - fraction_bits)
        return sign | static_cast<std::uint32_t>(k);
    const int top = floor_log2(rounded);
    Integer fraction = numerator(rounded / power_of_two(top - fraction_bits)) - (Integer(1) << fraction_bits);
    return sign | static_cast<std::uint32_t>(top + bias) << fraction_bits |
           static_cast<std::uint32_t>(fraction);
}

float round_to_f32(const Rational& q) {
    return std::bit_cast<float>(round_to_format(q, binary32));
}

namespace {

/// A zero with the sign IEEE gives an exact zero: that of the operands when they agree (both -0 in
/// a sum), +0 otherwise (round to nearest).
float signed_zero(bool negative) {
    return negative ? -0.0f : 0.0f;
}

} // namespace

// IEEE 754's rules for infinities and NaNs, then the exact operation rounded once.
const float inf = std::numeric_limits<float>::infinity();

float add(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return qnan;
    if (std::isinf(a) || std::isinf(b)) {
        if (std::isinf(a) && std::isinf(b) && std::signbit(a) != std::signbit(b)) return qnan;
        return std::isinf(a) ? a : b;
    }
    Rational s = value(a) + value(b);
    if (s == 0) return signed_zero(std::signbit(a) && std::signbit(b));
    return round_to_f32(s);
}
float sub(float a, float b) {
    return add(a, -b);
}
float mul(float a, float b) {
    const bool negative = std::signbit(a) != std::signbit(b);
    if (std::isnan(a) || std::isnan(b)) return qnan;
    if (std::isinf(a) || std::isinf(b)) {
        if (a == 0 || b == 0) return qnan;
        return negative ? -inf : inf;
    }
    Rational p = value(a) * value(b);
    if (p == 0) return signed_zero(negative);
    return round_to_f32(p);
}
float div(float a, float b) {
    const bool negative = std::signbit(a) != std::signbit(b);
    if (std::isnan(a) || std::isnan(b)) return qnan;
    if (std::isinf(a)) return std::isinf(b) ? qnan : (negative ? -inf : inf);
    if (std::isinf(b)) return signed_zero(negative);
    if (b == 0) return a == 0 ? qnan : (negative ? -inf : inf);
    Rational p = value(a) / value(b);
    if (p == 0) return signed_zero(negative);
    return round_to_f32(p);
}

} // namespace cardsim::numerics::spec
