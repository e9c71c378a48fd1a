#include "engine/numerics/exact_sum.hpp"

#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace cardsim::numerics {

float window_sum(std::span<const Term> terms) {
    int high = std::numeric_limits<int>::min();
    for (const Term& t : terms) {
        if (t.significand == 0) continue;
        high = std::max(high, top_of(t));
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

namespace {

/// Most rows window_sums_of_columns adds in doubles: 2^20 halves below 2^32 sum below 2^52, exactly.
constexpr std::size_t MAX_DOUBLE_ROWS = std::size_t{1} << 20;

/// Sweep 1 of window_sums_of_columns: each column's largest exponent field of its double products.
__attribute__((always_inline)) inline void fields_of_columns(const float* __restrict m, std::size_t rows,
                                                             std::size_t cols, const float* __restrict x,
                                                             int* __restrict field) {
    for (std::size_t i = 0; i < rows; ++i) {
        const double b = x[i];
        const float* row = m + i * cols;
        for (std::size_t j = 0; j < cols; ++j) {
            const auto bits = std::bit_cast<std::uint64_t>(static_cast<double>(row[j]) * b);
            field[j] = std::max(field[j], static_cast<int>((bits >> 52) & 0x7FF));
        }
    }
}

/// Sweep 2: each product placed in its column's window (times `scale`, truncated) and split into
/// 32-bit halves added to `hi` and `lo`.
__attribute__((always_inline)) inline void halves_of_columns(const float* __restrict m, std::size_t rows,
                                                             std::size_t cols, const float* __restrict x,
                                                             const double* __restrict scale,
                                                             double* __restrict hi, double* __restrict lo) {
    const double two32 = 4294967296.0, inv_two32 = 1.0 / two32;
    for (std::size_t i = 0; i < rows; ++i) {
        const double b = x[i];
        const float* row = m + i * cols;
        for (std::size_t j = 0; j < cols; ++j) {
            const double w = std::trunc(static_cast<double>(row[j]) * b * scale[j]);
            const double h = std::trunc(w * inv_two32);
            hi[j] += h;
            lo[j] += w - h * two32;
        }
    }
}

__attribute__((target("avx2"))) void fields_avx2(const float* m, std::size_t rows, std::size_t cols,
                                                 const float* x, int* field) {
    fields_of_columns(m, rows, cols, x, field);
}
__attribute__((target("avx2"))) void halves_avx2(const float* m, std::size_t rows, std::size_t cols,
                                                 const float* x, const double* scale, double* hi,
                                                 double* lo) {
    halves_of_columns(m, rows, cols, x, scale, hi, lo);
}
void fields_plain(const float* m, std::size_t rows, std::size_t cols, const float* x, int* field) {
    fields_of_columns(m, rows, cols, x, field);
}
void halves_plain(const float* m, std::size_t rows, std::size_t cols, const float* x, const double* scale,
                  double* hi, double* lo) {
    halves_of_columns(m, rows, cols, x, scale, hi, lo);
}

bool has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}

} // namespace

void window_sums_of_columns(std::span<const float> m, std::size_t rows, std::size_t cols,
                            std::span<const float> x, std::span<float> out) {
    // Every product a x b of two finite floats is exact in double (48 significant bits, magnitudes
    // 2^-298 .. 2^256, always normal), so both sweeps work on the double products, which vectorise
    // (the same operations, so the same bits, with AVX2 or without; a fused multiply-add could not
    // change them either: every product and every difference below is exact).
    // Sweep 1: each column's window top H (the highest top bit of its nonzero products) is the
    // largest exponent field F of its double products: H = F - 1022. A zero product's field (0) is
    // below every nonzero one's; a column of zero products sums to +0.
    std::vector<int> field(cols, 0);
    (has_avx2() ? fields_avx2 : fields_plain)(m.data(), rows, cols, x.data(), field.data());
    // Sweep 2: a product placed in its column's window is w = trunc(p x 2^-L) (L = H - 64): the
    // scaling is exact (or underflows only below 1, where w is 0 anyway) and the truncation toward
    // zero is the window's. |w| < 2^64 splits exactly into hi x 2^32 + lo (|hi|, |lo| < 2^32, signs
    // of w), and up to 2^20 of each add exactly in double (below 2^52).
    const bool halves = rows <= MAX_DOUBLE_ROWS;
    std::vector<double> scale(cols), hi(cols, 0.0), lo(cols, 0.0);
    for (std::size_t j = 0; j < cols; ++j)
        scale[j] = field[j] == 0 ? 0.0 : std::ldexp(1.0, WINDOW_PLACES - (field[j] - 1022));
    if (halves)
        (has_avx2() ? halves_avx2 : halves_plain)(m.data(), rows, cols, x.data(), scale.data(), hi.data(),
                                                  lo.data());
    for (std::size_t j = 0; j < cols; ++j) {
        if (field[j] == 0) {
            out[j] = 0.0f;
            continue;
        }
        if (!halves) { // more rows than the double halves hold exactly: the column's terms, one by one
            std::vector<Term> terms(rows);
            for (std::size_t i = 0; i < rows; ++i)
                terms[i] = product(m[i * cols + j], x[i]);
            out[j] = window_sum(terms);
            continue;
        }
        const __int128 sum =
            static_cast<__int128>(static_cast<std::int64_t>(hi[j])) * (std::int64_t{1} << 32) +
            static_cast<std::int64_t>(lo[j]);
        const bool negative = sum < 0;
        out[j] = round_to_f32(
            negative, negative ? -static_cast<unsigned __int128>(sum) : static_cast<unsigned __int128>(sum),
            field[j] - 1022 - WINDOW_PLACES);
    }
}

} // namespace cardsim::numerics
