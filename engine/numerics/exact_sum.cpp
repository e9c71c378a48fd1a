#include "engine/numerics/exact_sum.hpp"

#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <limits>

namespace cardsim::numerics {

float window_sum(std::span<const Term> terms) {
    int high = std::numeric_limits<int>::min();
    for (const Term& t : terms) {
        if (t.significand == 0) continue;
        const auto m =
            static_cast<std::uint64_t>(t.significand < 0 ? -static_cast<unsigned __int128>(t.significand)
                                                         : static_cast<unsigned __int128>(t.significand));
        high = std::max(high, t.exponent + bit_length(m));
    }
    if (high == std::numeric_limits<int>::min()) return 0.0f;
    const int low = high - WINDOW_PLACES;
    // A term placed in the window is below 2^64 (the window's top is at or above its top bit), so
    // the shifts are 64-bit; only the sum needs the i128.
    __int128 sum = 0;
    for (const Term& t : terms) {
        if (t.significand == 0) continue;
        const bool negative = t.significand < 0;
        const std::uint64_t m = negative ? 0 - static_cast<std::uint64_t>(t.significand)
                                         : static_cast<std::uint64_t>(t.significand);
        const int shift = t.exponent - low; // in [-inf, 64 - bit_length(m)]
        const std::uint64_t placed = shift >= 0 ? m << shift : shift > -64 ? m >> -shift : 0; // truncation
        sum += negative ? -static_cast<__int128>(placed) : static_cast<__int128>(placed);
    }
    const bool negative = sum < 0;
    return round_to_f32(
        negative, negative ? -static_cast<unsigned __int128>(sum) : static_cast<unsigned __int128>(sum), low);
}

} // namespace cardsim::numerics
