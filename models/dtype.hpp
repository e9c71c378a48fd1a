#pragma once
// The element types of a safetensors tensor: their names, sizes and conversion to double.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cardsim::models {

/// A safetensors dtype (huggingface/safetensors `Dtype`): little-endian, C order.
enum class Dtype {
    Bool,
    U8,
    I8,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    F64,
    I64,
    U64,
    F8_E4M3,
    F8_E5M2,
    F8_E8M0
};

/// The header spelling of `d` (`"BF16"`).
std::string_view name(Dtype d);

/// The dtype spelled `s` in a header, or nothing for an unknown spelling.
std::optional<Dtype> parse_dtype(std::string_view s);

/// Bytes per element of `d`.
std::size_t size_of(Dtype d);

/// Every dtype, in declaration order.
std::span<const Dtype> all_dtypes();

/// The value of the element stored little-endian at `p` as a double: exact for every dtype except
/// I64/U64 beyond 2^53 (rounded to nearest). F8_E4M3 is the `fn` variant (no infinities, S.1111.111
/// is NaN); F8_E8M0 is 2^(byte − 127) with 0xFF NaN.
double to_double(Dtype d, const std::byte* p);

/// The IEEE half at bits `h` as a double (exact).
double half_to_double(std::uint16_t h);

/// The bfloat16 at bits `b` as a double (exact).
inline double bf16_to_double(std::uint16_t b) {
    return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16));
}

/// `x` rounded to bfloat16 (nearest, ties to even; NaN stays NaN).
inline std::uint16_t float_to_bf16(float x) {
    auto u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
}

/// `x` rounded to an IEEE half (nearest, ties to even; overflow to infinity).
std::uint16_t float_to_half(float x);

} // namespace cardsim::models
