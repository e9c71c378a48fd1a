#include "models/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace cardsim::models {
namespace {

struct Info {
    Dtype dtype;
    std::string_view name;
    std::size_t size;
};

constexpr std::array<Info, 16> infos{{
    {Dtype::Bool, "BOOL", 1},
    {Dtype::U8, "U8", 1},
    {Dtype::I8, "I8", 1},
    {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},
    {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},
    {Dtype::U32, "U32", 4},
    {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},
    {Dtype::I64, "I64", 8},
    {Dtype::U64, "U64", 8},
    {Dtype::F8_E4M3, "F8_E4M3", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::F8_E8M0, "F8_E8M0", 1},
}};

constexpr std::array<Dtype, 16> every = [] {
    std::array<Dtype, 16> out{};
    for (std::size_t i = 0; i < infos.size(); ++i)
        out[i] = infos[i].dtype;
    return out;
}();

/// Loads a little-endian unsigned integer of `T` from `p` (any alignment).
template <class T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    static_assert(std::endian::native == std::endian::little, "cardsim reads little-endian data natively");
    return v;
}

/// A minifloat with `e` exponent bits and `m` mantissa bits (bias 2^(e-1) − 1) as a double; `inf_nan`
/// when the top exponent means infinity/NaN (IEEE style), else only `nan_bits` (masked) is NaN.
double minifloat(unsigned bits, int e, int m, bool ieee, unsigned nan_pattern) {
    const unsigned sign = bits >> (e + m);
    const unsigned exp = (bits >> m) & ((1u << e) - 1);
    const unsigned man = bits & ((1u << m) - 1);
    const int bias = (1 << (e - 1)) - 1;
    const double s = sign ? -1.0 : 1.0;
    if (ieee && exp == (1u << e) - 1)
        return man ? std::numeric_limits<double>::quiet_NaN() : s * std::numeric_limits<double>::infinity();
    if (!ieee && (bits & ((1u << (e + m)) - 1)) == nan_pattern)
        return std::numeric_limits<double>::quiet_NaN();
    if (exp == 0) return s * std::ldexp(static_cast<double>(man), 1 - bias - m);
    return s * std::ldexp(static_cast<double>(man | (1u << m)), static_cast<int>(exp) - bias - m);
}

} // namespace

std::string_view name(Dtype d) {
    return infos[static_cast<std::size_t>(d)].name;
}

std::optional<Dtype> parse_dtype(std::string_view s) {
    for (auto& i : infos)
        if (i.name == s) return i.dtype;
    return std::nullopt;
}

std::size_t size_of(Dtype d) {
    return infos[static_cast<std::size_t>(d)].size;
}

std::span<const Dtype> all_dtypes() {
    return every;
}

double half_to_double(std::uint16_t h) {
    return minifloat(h, 5, 10, true, 0);
}

std::uint16_t float_to_half(float x) {
    const auto u = std::bit_cast<std::uint32_t>(x);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a >= 0x477ff000u) return sign | 0x7c00u; // rounds to or beyond 65520: infinity
    if (a < 0x38800000u) {                       // a half subnormal (or zero)
        const double v = static_cast<double>(std::bit_cast<float>(a)) * 16777216.0; // units of 2^-24
        return sign | static_cast<std::uint16_t>(std::nearbyint(v));
    }
    std::uint32_t r = a - 0x38000000u; // rebias 127 → 15
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | static_cast<std::uint16_t>(r >> 13);
}

double to_double(Dtype d, const std::byte* p) {
    switch (d) {
    case Dtype::Bool:
        return load<std::uint8_t>(p) != 0 ? 1.0 : 0.0;
    case Dtype::U8:
        return load<std::uint8_t>(p);
    case Dtype::I8:
        return load<std::int8_t>(p);
    case Dtype::I16:
        return load<std::int16_t>(p);
    case Dtype::U16:
        return load<std::uint16_t>(p);
    case Dtype::F16:
        return half_to_double(load<std::uint16_t>(p));
    case Dtype::BF16:
        return bf16_to_double(load<std::uint16_t>(p));
    case Dtype::I32:
        return load<std::int32_t>(p);
    case Dtype::U32:
        return load<std::uint32_t>(p);
    case Dtype::F32:
        return load<float>(p);
    case Dtype::F64:
        return load<double>(p);
    case Dtype::I64:
        return static_cast<double>(load<std::int64_t>(p));
    case Dtype::U64:
        return static_cast<double>(load<std::uint64_t>(p));
    case Dtype::F8_E4M3:
        return minifloat(load<std::uint8_t>(p), 4, 3, false, 0x7f);
    case Dtype::F8_E5M2:
        return minifloat(load<std::uint8_t>(p), 5, 2, true, 0);
    case Dtype::F8_E8M0: {
        const auto b = load<std::uint8_t>(p);
        return b == 0xff ? std::numeric_limits<double>::quiet_NaN()
                         : std::ldexp(1.0, static_cast<int>(b) - 127);
    }
    }
    return 0.0;
}

} // namespace cardsim::models
