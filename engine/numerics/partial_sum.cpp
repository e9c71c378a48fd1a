#include "engine/numerics/partial_sum.hpp"

#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace cardsim::numerics {

void encode(const PartialSum& p, std::span<std::byte, PARTIAL_BYTES> out) {
    const auto u = static_cast<unsigned __int128>(p.sum);
    for (int i = 0; i < 16; ++i)
        out[std::size_t(i)] = std::byte(static_cast<std::uint8_t>(u >> (8 * i)));
    const auto base = static_cast<std::uint32_t>(p.base);
    for (int i = 0; i < 4; ++i)
        out[16 + std::size_t(i)] = std::byte(static_cast<std::uint8_t>(base >> (8 * i)));
    const auto top = static_cast<std::uint16_t>(p.top);
    out[20] = std::byte(static_cast<std::uint8_t>(top));
    out[21] = std::byte(static_cast<std::uint8_t>(top >> 8));
    out[22] = std::byte(static_cast<std::uint8_t>(p.flags));
    out[23] = std::byte(static_cast<std::uint8_t>(p.flags >> 8));
}

PartialSum decode_partial(std::span<const std::byte, PARTIAL_BYTES> in) {
    PartialSum p;
    unsigned __int128 u = 0;
    for (int i = 15; i >= 0; --i)
        u = (u << 8) | std::to_integer<std::uint8_t>(in[std::size_t(i)]);
    p.sum = static_cast<__int128>(u);
    std::uint32_t base = 0;
    for (int i = 3; i >= 0; --i)
        base = (base << 8) | std::to_integer<std::uint8_t>(in[16 + std::size_t(i)]);
    p.base = static_cast<std::int32_t>(base);
    p.top = static_cast<std::int16_t>(std::to_integer<std::uint16_t>(in[20]) |
                                      (std::to_integer<std::uint16_t>(in[21]) << 8));
    p.flags = static_cast<std::uint16_t>(std::to_integer<std::uint16_t>(in[22]) |
                                         (std::to_integer<std::uint16_t>(in[23]) << 8));
    return p;
}

PartialSum partial_of(std::span<const Term> terms) {
    int high = std::numeric_limits<int>::min(), low = std::numeric_limits<int>::max();
    for (const Term& t : terms) {
        if (t.significand == 0) continue;
        high = std::max(high, top_of(t));
        low = std::min(low, t.exponent);
    }
    PartialSum p;
    p.flags = PartialSum::Exact;
    if (high == std::numeric_limits<int>::min()) return p; // no nonzero term
    const int count_bits = bit_length(static_cast<unsigned __int128>(terms.size()));
    if (high - low + count_bits <= 126) {
        for (const Term& t : terms)
            if (t.significand != 0)
                p.sum +=
                    static_cast<__int128>(t.significand) * (static_cast<__int128>(1) << (t.exponent - low));
        p.base = low;
    } else { // as window_sum: every term truncated to the window [high - 64, high)
        p.flags = 0;
        p.base = high - WINDOW_PLACES;
        for (const Term& t : terms) {
            if (t.significand == 0) continue;
            const bool negative = t.significand < 0;
            const std::uint64_t m = negative ? 0 - static_cast<std::uint64_t>(t.significand)
                                             : static_cast<std::uint64_t>(t.significand);
            const int shift = t.exponent - p.base;
            const std::uint64_t placed = shift >= 0 ? m << shift : shift > -64 ? m >> -shift : 0;
            p.sum += negative ? -static_cast<__int128>(placed) : static_cast<__int128>(placed);
        }
    }
    p.top = static_cast<std::int16_t>(high);
    return p;
}

namespace {

/// Whether a part has no nonzero term (an exact zero whose window constrains nothing).
bool empty(const PartialSum& p) {
    return (p.flags & PartialSum::Exact) && p.sum == 0 && p.top <= p.base;
}

} // namespace

bool exact_join(std::span<const PartialSum> parts) {
    int low = std::numeric_limits<int>::max(), high = std::numeric_limits<int>::min();
    for (auto& p : parts) {
        if (p.flags & PartialSum::Nan) return true;
        if (!(p.flags & PartialSum::Exact)) return false;
        if (empty(p)) continue;
        low = std::min(low, p.base);
        high = std::max(high, int(p.top));
    }
    return high == std::numeric_limits<int>::min() || high - low <= WINDOW_PLACES;
}

float join(std::span<const PartialSum> parts) {
    for (auto& p : parts)
        if (p.flags & PartialSum::Nan) return std::numeric_limits<float>::quiet_NaN();
    if (exact_join(parts)) {
        int low = std::numeric_limits<int>::max();
        for (auto& p : parts)
            if (!empty(p)) low = std::min(low, p.base);
        if (low == std::numeric_limits<int>::max()) return 0.0f;
        // Every part lies in 64 places above `low`: each shifted sum stays below n x 2^64.
        __int128 total = 0;
        for (auto& p : parts)
            if (!empty(p)) total += p.sum * (static_cast<__int128>(1) << (p.base - low));
        const bool negative = total < 0;
        return round_to_f32(
            negative,
            negative ? -static_cast<unsigned __int128>(total) : static_cast<unsigned __int128>(total), low);
    }
    // Each part as up to three terms of 62 bits, joined by the window rule.
    std::vector<Term> terms;
    for (auto& p : parts) {
        const bool negative = p.sum < 0;
        auto m = negative ? -static_cast<unsigned __int128>(p.sum) : static_cast<unsigned __int128>(p.sum);
        constexpr unsigned __int128 mask = (static_cast<unsigned __int128>(1) << 62) - 1;
        for (int k = 0; m != 0; ++k, m >>= 62) {
            const auto d = static_cast<std::int64_t>(m & mask);
            if (d != 0) terms.push_back({negative ? -d : d, p.base + 62 * k});
        }
    }
    return window_sum(terms);
}

} // namespace cardsim::numerics
