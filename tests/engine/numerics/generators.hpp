#pragma once
// Random and adversarial inputs for the numerics tests: every generator is seeded, so a failure
// reproduces.

#include "engine/numerics/kernel.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace cardsim::numerics::testing {

/// The kinds of rows the tests feed the fast and the spec paths.
enum class RowKind {
    Normal,     ///< Gaussian values of one magnitude
    Wide,       ///< every value its own random binade over the whole f32 range (huge dynamic range)
    Subnormal,  ///< f32 subnormals only
    Ties,       ///< values on round-half points of coarse grids
    Cancelling, ///< pairs of large values of opposite sign plus small ones
    Zeros,      ///< +0 and -0 only
    Extremes,   ///< FLT_MAX, the smallest subnormal, powers of two and their neighbours
    Outliers,   ///< small values with a few large outliers
    Unit,       ///< Gaussian values of standard deviation 1
};

inline constexpr RowKind all_row_kinds[] = {RowKind::Normal,   RowKind::Wide,       RowKind::Subnormal,
                                            RowKind::Ties,     RowKind::Cancelling, RowKind::Zeros,
                                            RowKind::Extremes, RowKind::Outliers};

/// A row of `n` values of `kind` drawn from `rng`.
inline std::vector<float> make_row(RowKind kind, std::size_t n, std::mt19937_64& rng) {
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::uniform_int_distribution<int> binade(-149, 127), small(-20, 20), coin(0, 1);
    std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7FFFFF);
    std::vector<float> row(n);
    float scale = std::ldexp(1.0f, small(rng));
    for (std::size_t j = 0; j < n; ++j) {
        float x = 0;
        switch (kind) {
        case RowKind::Normal:
            x = gauss(rng) * scale;
            break;
        case RowKind::Wide: {
            int e = binade(rng);
            x = std::ldexp(1.0f + static_cast<float>(mantissa(rng)) * 0x1p-23f, e);
            if (!std::isfinite(x)) x = std::numeric_limits<float>::max();
            break;
        }
        case RowKind::Subnormal:
            x = std::bit_cast<float>(mantissa(rng) >> (mantissa(rng) % 23));
            break;
        case RowKind::Ties:
            x = (static_cast<float>(small(rng)) + 0.5f) * std::ldexp(1.0f, small(rng) / 4);
            break;
        case RowKind::Cancelling:
            x = (j % 4 < 2 ? 1e6f : 1.0f) * (j % 2 ? -1.0f : 1.0f) *
                (1.0f + 0x1p-20f * static_cast<float>(j % 7));
            break;
        case RowKind::Zeros:
            x = coin(rng) ? -0.0f : 0.0f;
            break;
        case RowKind::Extremes: {
            const float pick[] = {std::numeric_limits<float>::max(),
                                  -std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min(),
                                  1.0f,
                                  -1.0f,
                                  0x1p-126f,
                                  std::nextafter(1.0f, 2.0f),
                                  std::nextafter(1.0f, 0.0f),
                                  0x1p127f,
                                  0.0f};
            x = pick[rng() % std::size(pick)];
            break;
        }
        case RowKind::Outliers:
            x = gauss(rng) * 0.01f * (j % 17 == 3 ? 1000.0f : 1.0f);
            break;
        case RowKind::Unit:
            x = gauss(rng);
            break;
        }
        row[j] = x;
    }
    return row;
}

/// Bit-pattern equality of floats (NaN equal to NaN of the same pattern; +0 and -0 differ).
inline bool same_bits(float a, float b) {
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

/// Runs `body` once with each kernel (AVX2 where the CPU has it, and portable C++), then sets the best.
template <class F>
void for_each_kernel(F body) {
    for (Kernel k : {Kernel::Best, Kernel::Portable}) {
        use_kernel(k);
        body();
    }
    use_kernel(Kernel::Best);
}

} // namespace cardsim::numerics::testing
