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
    __int128 sum = 0;
    for (const Term& t : terms) {
        if (t.significand == 0) continue;
        const bool negative = t.significand < 0;
        const unsigned __int128 m = negative ? -static_cast<unsigned __int128>(t.significand)
                                             : static_cast<unsigned __int128>(t.significand);
        const int shift = t.exponent - low; // <= 64 - bit_length(m)
        unsigned __int128 placed = 0;
        if (shift >= 0)
            placed = m << shift;
        else if (shift > -64)
            placed = m >> -shift; // truncation toward zero of the magnitude
        sum += negative ? -static_cast<__int128>(placed) : static_cast<__int128>(placed);
    }
    const bool negative = sum < 0;
    return round_to_f32(
        negative, negative ? -static_cast<unsigned __int128>(sum) : static_cast<unsigned __int128>(sum), low);
}

Term product(float a, float b) {
    const Dyadic x = dyadic(a), y = dyadic(b);
    const auto m = static_cast<std::int64_t>(static_cast<std::uint64_t>(x.significand) * y.significand);
    return {x.negative != y.negative ? -m : m, x.exponent + y.exponent};
}

Term term(float x) {
    const Dyadic d = dyadic(x);
    const auto m = static_cast<std::int64_t>(d.significand);
    return {d.negative ? -m : m, d.exponent};
}

} // namespace cardsim::numerics
