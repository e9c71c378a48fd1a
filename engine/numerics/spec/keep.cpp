#include "engine/numerics/spec/keep.hpp"

#include "engine/numerics/spec/functions.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace cardsim::numerics::spec {

std::vector<float> hadamard(std::span<const float> in) {
    const std::size_t n = in.size();
    const auto all_nan = std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> x(in.begin(), in.end());
    for (float v : x)
        if (!std::isfinite(v)) return all_nan;
    for (std::size_t h = 1; h < n; h *= 2)
        for (std::size_t i = 0; i < n; ++i) {
            if ((i & h) != 0) continue;
            const float a = x[i], b = x[i + h];
            x[i] = add(a, b);
            x[i + h] = sub(a, b);
            if (std::isinf(x[i]) || std::isinf(x[i + h])) return all_nan; // an addition overflowed
        }
    const float c = reference(Function::Rsqrt, static_cast<float>(n));
    for (float& v : x)
        v = mul(v, c);
    return x;
}

std::vector<std::byte> keep_row(std::span<const float> x, Keep k) {
    std::vector<std::byte> out;
    auto put16 = [&](std::uint16_t b) {
        out.push_back(static_cast<std::byte>(b & 0xFF));
        out.push_back(static_cast<std::byte>(b >> 8));
    };
    if (k == Keep::F32) {
        for (float v : x) {
            const auto u = std::bit_cast<std::uint32_t>(v);
            put16(static_cast<std::uint16_t>(u & 0xFFFF));
            put16(static_cast<std::uint16_t>(u >> 16));
        }
        return out;
    }
    if (k == Keep::F16) {
        for (float v : x) {
            if (std::isnan(v))
                put16(static_cast<std::uint16_t>((std::signbit(v) ? 0x8000 : 0) | 0x7E00 |
                                                 ((std::bit_cast<std::uint32_t>(v) & 0x7FFFFF) >> 13)));
            else if (std::isinf(v))
                put16(std::signbit(v) ? 0xFC00 : 0x7C00);
            else {
                std::uint32_t b = round_to_format(value(v), binary16);
                if (b == 0 && std::signbit(v)) b = 0x8000;
                put16(static_cast<std::uint16_t>(b));
            }
        }
        return out;
    }
    std::vector<float> v(x.begin(), x.end());
    if (k == Keep::Int8RowsRotated) v = hadamard(x);
    std::vector<Integer> codes(v.size(), 0);
    bool finite = true;
    Rational amax = 0;
    for (float f : v) {
        if (!std::isfinite(f))
            finite = false;
        else
            amax = std::max(amax, value(f) < 0 ? Rational(-value(f)) : value(f));
    }
    std::uint16_t d = 0x7E00;
    if (finite) {
        d = static_cast<std::uint16_t>(round_to_format(amax / 127, binary16));
        if (d >= 0x7C00) d = 0x7BFF;
        const Rational dv = value(F16{d});
        if (dv != 0)
            for (std::size_t j = 0; j < v.size(); ++j) {
                Integer c = round_half_even(value(v[j]) / dv);
                codes[j] = c > 127 ? Integer(127) : c < -127 ? Integer(-127) : c;
            }
    }
    put16(d);
    for (auto& c : codes)
        out.push_back(static_cast<std::byte>(static_cast<std::uint8_t>(static_cast<int>(c))));
    return out;
}

} // namespace cardsim::numerics::spec
