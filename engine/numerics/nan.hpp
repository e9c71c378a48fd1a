#pragma once
// The one NaN the card writes and the finiteness test the numerics ask of a vector: shared by the
// fast kernels and the exact spec so that each file does not define its own.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace cardsim::numerics {

/// The quiet NaN 0x7FC00000: the only NaN the card writes.
inline constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

/// `v`, or the quiet NaN 0x7FC00000 when `v` is any NaN (the card writes no other).
inline float canonical(float v) {
    return std::isnan(v) ? qnan : v;
}

/// Whether every value is finite: a branch-free test of the exponent bits, so that it vectorises
/// (the Gated-DeltaNet state step asks it of the whole state three times).
inline bool finite(std::span<const float> x) {
    std::uint32_t bad = 0;
    for (float v : x)
        bad |= static_cast<std::uint32_t>((std::bit_cast<std::uint32_t>(v) & 0x7F800000u) == 0x7F800000u);
    return bad == 0;
}

} // namespace cardsim::numerics
