#include "engine/numerics/spec/weights.hpp"

#include <cmath>

namespace cardsim::numerics::spec {
namespace {

/// Byte offsets of the layout, derived here from the documented rules.
struct Offsets {
    std::size_t groups, padded, code_bytes, scale_bytes, stride;
};

Offsets offsets(const MatrixLayout& l) {
    Offsets o{};
    o.groups = l.cols / l.format.group + (l.cols % l.format.group != 0 ? 1 : 0);
    o.padded = o.groups * l.format.group;
    o.code_bytes = l.format.codes == CodeFormat::Int8 ? o.padded : o.padded / 2;
    o.scale_bytes = o.groups * (l.format.scale == ScaleFormat::E8M0 ? 1 : 2);
    o.stride = o.code_bytes + o.scale_bytes;
    while (o.stride % l.row_align != 0)
        ++o.stride;
    return o;
}

Integer clamp(const Integer& c, const Integer& q) {
    return c > q ? q : c < -q ? Integer(-q) : c;
}

} // namespace

std::vector<std::byte> quantize_matrix(std::span<const float> values, const MatrixLayout& l) {
    const Offsets o = offsets(l);
    std::vector<std::byte> out(l.rows * o.stride, std::byte{0});
    const Integer q = l.format.codes == CodeFormat::Int8 ? 127 : 7;
    for (std::size_t r = 0; r < l.rows; ++r) {
        std::byte* row_scales = out.data() + r * o.stride;
        std::byte* row = row_scales + o.scale_bytes;
        for (std::size_t g = 0; g < o.groups; ++g) {
            std::vector<Rational> x;
            bool finite = true;
            for (std::size_t c = g * l.format.group; c < std::min(l.cols, (g + 1) * l.format.group); ++c) {
                float v = values[r * l.cols + c];
                if (!std::isfinite(v))
                    finite = false;
                else
                    x.push_back(value(v));
            }
            Rational amax = 0;
            for (auto& v : x)
                amax = std::max(amax, v < 0 ? Rational(-v) : v);
            std::vector<Integer> codes(x.size(), 0);
            std::byte* scale = row_scales + g * (l.format.scale == ScaleFormat::E8M0 ? 1 : 2);
            if (l.format.scale == ScaleFormat::E8M0) {
                int k = -127;
                if (!finite) {
                    scale[0] = std::byte{0xFF};
                } else {
                    if (amax != 0)
                        while (round_half_even(amax / power_of_two(k)) > q)
                            ++k;
                    scale[0] = static_cast<std::byte>(k + 127);
                    if (amax != 0)
                        for (std::size_t j = 0; j < x.size(); ++j)
                            codes[j] = clamp(round_half_even(x[j] / power_of_two(k)), q);
                }
            } else {
                std::uint16_t bits = 0x7E00;
                if (finite) {
                    bits = static_cast<std::uint16_t>(round_to_format(amax / Rational(q), binary16));
                    if (bits >= 0x7C00) bits = 0x7BFF; // clamped to the largest finite f16
                    Rational d = value(F16{bits});
                    if (d != 0)
                        for (std::size_t j = 0; j < x.size(); ++j)
                            codes[j] = clamp(round_half_even(x[j] / d), q);
                }
                scale[0] = static_cast<std::byte>(bits & 0xFF);
                scale[1] = static_cast<std::byte>(bits >> 8);
            }
            for (std::size_t j = 0; j < codes.size(); ++j) {
                const std::size_t c = g * l.format.group + j;
                const int code = static_cast<int>(codes[j]);
                if (l.format.codes == CodeFormat::Int8) {
                    row[c] = static_cast<std::byte>(static_cast<std::uint8_t>(code));
                } else {
                    // column c: block c / 32, byte (c % 32) % 16 of it, low nibble for the first 16
                    const std::size_t byte = (c / 32) * 16 + (c % 32) % 16;
                    const auto nibble = static_cast<std::uint8_t>(code & 0xF);
                    auto b = static_cast<std::uint8_t>(row[byte]);
                    b = (c % 32) < 16 ? static_cast<std::uint8_t>((b & 0xF0) | nibble)
                                      : static_cast<std::uint8_t>((b & 0x0F) | nibble << 4);
                    row[byte] = static_cast<std::byte>(b);
                }
            }
        }
    }
    return out;
}

int weight_code(std::span<const std::byte> bytes, const MatrixLayout& l, std::size_t r, std::size_t c) {
    const Offsets o = offsets(l);
    const std::byte* row = bytes.data() + r * o.stride + o.scale_bytes;
    if (l.format.codes == CodeFormat::Int8) return static_cast<int>(static_cast<std::int8_t>(row[c]));
    const auto b = static_cast<std::uint8_t>(row[(c / 32) * 16 + (c % 32) % 16]);
    const int nibble = (c % 32) < 16 ? b & 0xF : b >> 4;
    return nibble < 8 ? nibble : nibble - 16;
}

std::optional<Rational> weight_scale(std::span<const std::byte> bytes, const MatrixLayout& l, std::size_t r,
                                     std::size_t g) {
    const Offsets o = offsets(l);
    const std::byte* row = bytes.data() + r * o.stride;
    if (l.format.scale == ScaleFormat::E8M0) {
        const auto x = static_cast<std::uint8_t>(row[g]);
        if (x == 0xFF) return std::nullopt;
        return power_of_two(static_cast<int>(x) - 127);
    }
    const auto bits = static_cast<std::uint16_t>(static_cast<std::uint8_t>(row[2 * g]) |
                                                 static_cast<std::uint8_t>(row[2 * g + 1]) << 8);
    if ((bits & 0x7C00) == 0x7C00) return std::nullopt;
    return value(F16{bits});
}

} // namespace cardsim::numerics::spec
