#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/rotary.hpp"

#include "engine/error.hpp"
#include "engine/numerics/functions.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cardsim::numerics {

void rotate(std::span<float> row, std::size_t head_dim, std::size_t rotary_dim, double theta,
            std::uint32_t pos) {
    if (head_dim == 0 || row.size() % head_dim != 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim)
        throw Error("rotation: a row of " + std::to_string(row.size()) + " values in heads of " +
                    std::to_string(head_dim) + " with an even rotary dimension of at most the head, not " +
                    std::to_string(rotary_dim));
    if (!(theta > 0) || !std::isfinite(theta))
        throw Error("rotation: the rotary base must be positive and finite, not " + std::to_string(theta));
    if (pos >= (1u << 24)) throw Error("rotation: position " + std::to_string(pos) + " is beyond 2^24");
    const std::size_t half = rotary_dim / 2;
    std::vector<float> c(half), s(half);
    for (std::size_t i = 0; i < half; ++i) {
        const float a = static_cast<float>(pos) *
                        inverse_frequency(static_cast<int>(i), static_cast<int>(rotary_dim), theta);
        c[i] = cos(a);
        s[i] = sin(a);
    }
    for (std::size_t h = 0; h < row.size(); h += head_dim)
        for (std::size_t i = 0; i < half; ++i) {
            const float x1 = row[h + i], x2 = row[h + i + half];
            const float y1 = x1 * c[i] - x2 * s[i], y2 = x2 * c[i] + x1 * s[i];
            row[h + i] = std::isnan(y1) ? std::numeric_limits<float>::quiet_NaN() : y1;
            row[h + i + half] = std::isnan(y2) ? std::numeric_limits<float>::quiet_NaN() : y2;
        }
}

} // namespace cardsim::numerics
