#include "engine/numerics/half.hpp"

#include "engine/numerics/rounding.hpp"

#include <bit>
#include <cmath>

namespace cardsim::numerics {
namespace {

/// The 16-bit pattern of an f32 NaN: sign, all-ones exponent, quiet bit, top payload bits.
std::uint16_t nan16(std::uint32_t u, int fraction_bits, int exponent_bits) {
    const std::uint32_t sign = (u >> 31) << 15;
    const std::uint32_t exponent = ((1u << exponent_bits) - 1) << fraction_bits;
    const std::uint32_t quiet = 1u << (fraction_bits - 1);
    const std::uint32_t payload = (u & 0x7FFFFF) >> (23 - fraction_bits);
    return static_cast<std::uint16_t>(sign | exponent | quiet | payload);
}

/// An f32 pattern from 16 bits with `fraction_bits`/`exponent_bits`, exactly.
float widen(std::uint16_t h, int fraction_bits, int exponent_bits) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h >> 15) << 31;
    const int field = (h >> fraction_bits) & ((1 << exponent_bits) - 1);
    const std::uint32_t fraction = h & ((1u << fraction_bits) - 1);
    const int max_field = (1 << exponent_bits) - 1;
    if (field == max_field) {
        if (fraction == 0) return std::bit_cast<float>(sign | 0x7F800000u);
        return std::bit_cast<float>(sign | 0x7FC00000u | fraction << (23 - fraction_bits));
    }
    const int bias = (1 << (exponent_bits - 1)) - 1;
    if (field == 0) {
        // value fraction x 2^(1 - bias - fraction_bits): exact in f32 (wider range, more bits).
        return std::bit_cast<float>(round_to_format(sign != 0, fraction, 1 - bias - fraction_bits, binary32));
    }
    const std::uint32_t field32 = static_cast<std::uint32_t>(field - bias + 127);
    return std::bit_cast<float>(sign | field32 << 23 | fraction << (23 - fraction_bits));
}

std::uint16_t narrow(float x, BinaryFormat f) {
    const auto u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7F800000u) == 0x7F800000u) {
        if ((u & 0x7FFFFF) != 0) return nan16(u, f.precision - 1, f.exponent_bits);
        const std::uint32_t inf = ((1u << f.exponent_bits) - 1) << (f.precision - 1);
        return static_cast<std::uint16_t>(((u >> 31) << 15) | inf);
    }
    const Dyadic d = dyadic(x);
    return static_cast<std::uint16_t>(round_to_format(d.negative, d.significand, d.exponent, f));
}

} // namespace

F16 to_f16(float x) {
    return F16{narrow(x, binary16)};
}

F16 f16_from_double(double x) {
    const auto u = std::bit_cast<std::uint64_t>(x);
    if (std::isnan(x)) return F16{static_cast<std::uint16_t>(((u >> 63) << 15) | 0x7E00)};
    if (std::isinf(x)) return F16{static_cast<std::uint16_t>(((u >> 63) << 15) | 0x7C00)};
    const bool negative = (u >> 63) != 0;
    const int field = static_cast<int>((u >> 52) & 0x7FF);
    const std::uint64_t fraction = u & ((std::uint64_t{1} << 52) - 1);
    const std::uint64_t significand = field == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
    const int exponent = field == 0 ? -1074 : field - 1075;
    return F16{static_cast<std::uint16_t>(round_to_format(negative, significand, exponent, binary16))};
}

float to_f32(F16 h) {
    return widen(h.bits, 10, 5);
}

BF16 to_bf16(float x) {
    return BF16{narrow(x, bfloat16)};
}

float to_f32(BF16 h) {
    return widen(h.bits, 7, 8);
}

F16Parts parts(F16 h) {
    const int field = (h.bits >> 10) & 0x1F;
    const std::int32_t fraction = h.bits & 0x3FF;
    const std::int32_t sign = (h.bits & 0x8000) ? -1 : 1;
    if (field == 0) return {sign * fraction, -24};
    return {sign * (fraction | 0x400), field - 25};
}

} // namespace cardsim::numerics
