#include "engine/numerics/exact_sum.hpp"

#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <limits>
#include <vector>

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

void window_sums_of_columns(std::span<const float> m, std::size_t rows, std::size_t cols,
                            std::span<const float> x, std::span<float> out) {
    // Calls f(column, product's significand, its exponent, its sign) for each nonzero product, in
    // row-major order (recomputing the products for the second sweep is cheaper than keeping them).
    auto each_product = [&](auto&& f) {
        for (std::size_t i = 0; i < rows; ++i) {
            const Dyadic b = dyadic(x[i]);
            if (b.significand == 0) continue;
            const float* row = m.data() + i * cols;
            for (std::size_t j = 0; j < cols; ++j) {
                const Dyadic a = dyadic(row[j]);
                const std::uint64_t p = std::uint64_t{a.significand} * b.significand;
                if (p != 0) f(j, p, a.exponent + b.exponent, a.negative != b.negative);
            }
        }
    };
    // Sweep 1: each column's window top (the highest top bit of its nonzero products).
    std::vector<int> high(cols, std::numeric_limits<int>::min());
    each_product(
        [&](std::size_t j, std::uint64_t p, int e, bool) { high[j] = std::max(high[j], e + bit_length(p)); });
    // Sweep 2: each product truncated into its column's window and added exactly.
    std::vector<__int128> sum(cols, 0);
    each_product([&](std::size_t j, std::uint64_t p, int e, bool negative) {
        const int shift = e - (high[j] - WINDOW_PLACES);
        const std::uint64_t placed = shift >= 0 ? p << shift : shift > -64 ? p >> -shift : 0;
        sum[j] += negative ? -static_cast<__int128>(placed) : static_cast<__int128>(placed);
    });
    for (std::size_t j = 0; j < cols; ++j) {
        if (high[j] == std::numeric_limits<int>::min()) {
            out[j] = 0.0f;
            continue;
        }
        const bool negative = sum[j] < 0;
        out[j] = round_to_f32(negative,
                              negative ? -static_cast<unsigned __int128>(sum[j])
                                       : static_cast<unsigned __int128>(sum[j]),
                              high[j] - WINDOW_PLACES);
    }
}

} // namespace cardsim::numerics
