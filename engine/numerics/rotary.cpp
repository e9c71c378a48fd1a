#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/rotary.hpp"

#include "engine/error.hpp"
#include "engine/numerics/functions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cardsim::numerics {
namespace {

/// Turns each pair (i, i + half) of every head of `row` by the cosines `c` and sines `s` (each
/// product rounded, then the sum; every NaN the quiet NaN).
void turn(std::span<float> row, std::size_t head_dim, std::span<const float> c, std::span<const float> s) {
    const std::size_t half = c.size();
    for (std::size_t h = 0; h < row.size(); h += head_dim)
        for (std::size_t i = 0; i < half; ++i) {
            const float x1 = row[h + i], x2 = row[h + i + half];
            const float y1 = x1 * c[i] - x2 * s[i], y2 = x2 * c[i] + x1 * s[i];
            row[h + i] = std::isnan(y1) ? std::numeric_limits<float>::quiet_NaN() : y1;
            row[h + i + half] = std::isnan(y2) ? std::numeric_limits<float>::quiet_NaN() : y2;
        }
}

} // namespace

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
    turn(row, head_dim, c, s);
}

std::vector<float> yarn_frequencies(std::size_t rotary_dim, double theta, const Yarn& y) {
    const auto exact = yarn_frequencies_f64(rotary_dim, theta, y);
    return std::vector<float>(exact.begin(), exact.end()); // each rounded once to f32
}

std::vector<double> yarn_frequencies_f64(std::size_t rotary_dim, double theta, const Yarn& y) {
    if (rotary_dim < 2 || rotary_dim % 2 != 0)
        throw Error("YaRN: an even rotary dimension of at least 2, not " + std::to_string(rotary_dim));
    if (!(theta > 1) || !std::isfinite(theta) || !(y.factor >= 1) || !(y.beta_fast > y.beta_slow) ||
        !(y.beta_slow > 0) || y.original_max == 0)
        throw Error("YaRN: a base above 1, a factor of at least 1 and beta_fast > beta_slow > 0 are needed");
    const double d = static_cast<double>(rotary_dim), pi = std::acos(-1.0);
    auto correction = [&](double rotations) {
        return d * std::log(static_cast<double>(y.original_max) / (rotations * 2 * pi)) /
               (2 * std::log(theta));
    };
    double low = correction(y.beta_fast), high = correction(y.beta_slow);
    if (y.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, d - 1);
    if (low == high) high += 0.001;
    const std::size_t half = rotary_dim / 2;
    std::vector<double> f(half);
    for (std::size_t i = 0; i < half; ++i) {
        const double extrapolated = 1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / d);
        const double interpolated = extrapolated / y.factor;
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double keep = 1 - ramp; // transformers' inv_freq_extrapolation_factor
        f[i] = interpolated * (1 - keep) + extrapolated * keep;
    }
    return f;
}

void rotate_scaled(std::span<float> row, std::size_t head_dim, std::size_t rotary_dim,
                   std::span<const float> freqs, float scale, std::uint32_t pos) {
    if (head_dim == 0 || row.size() % head_dim != 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim ||
        freqs.size() != rotary_dim / 2)
        throw Error("scaled rotation: a row of " + std::to_string(row.size()) + " values in heads of " +
                    std::to_string(head_dim) +
                    ", an even rotary dimension of at most the head and a frequency " + "a pair, not " +
                    std::to_string(rotary_dim) + " and " + std::to_string(freqs.size()));
    if (pos >= (1u << 24)) throw Error("rotation: position " + std::to_string(pos) + " is beyond 2^24");
    const std::size_t half = rotary_dim / 2;
    std::vector<float> c(half), s(half);
    for (std::size_t i = 0; i < half; ++i) {
        const float a = static_cast<float>(pos) * freqs[i];
        c[i] = cos(a) * scale;
        s[i] = sin(a) * scale;
    }
    turn(row, head_dim, c, s);
}

} // namespace cardsim::numerics
