#include "engine/numerics/weights.hpp"

#include "engine/error.hpp"
#include "engine/numerics/kernel.hpp"
#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <immintrin.h>

namespace cardsim::numerics {
namespace {

inline double round_even(double y) {
    constexpr double magic = 0x1.8p52;
    return (y + magic) - magic;
}

/// The least k >= -127 with round_half_even(amax / 2^k) <= q (amax > 0 and finite).
int e8m0_exponent(double amax, int q) {
    int e = std::ilogb(amax) - (bit_length(static_cast<unsigned>(q)) - 1);
    if (round_even(std::ldexp(amax, -e)) > q) ++e;
    return std::max(e, -127);
}

/// e8m0_exponent of a normal f32 amax given as its bits (no sign), from the bits alone: with
/// b = bit_length(q), amax / 2^(E - b + 1) (E its exponent) is its significand times 2^(b-1),
/// exact in f32, and the exponent goes one up when that rounds past q.
inline int e8m0_exponent_normal(std::uint32_t bits, int q) {
    const int b = bit_length(static_cast<unsigned>(q));
    const int e = static_cast<int>(bits >> 23) - 127 - (b - 1);
    const float scaled = std::bit_cast<float>((bits & 0x7FFFFFu) | static_cast<std::uint32_t>(126 + b) << 23);
    const float rounded = (scaled + 0x1.8p23f) - 0x1.8p23f;
    return std::max(rounded > static_cast<float>(q) ? e + 1 : e, -127);
}

/// 2^e as a float, for e in [-126, 127].
inline float float_power_of_two(int e) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23);
}

/// The largest of the `n` values' bits without sign (n a multiple of 8), eight lanes at a time.
__attribute__((target("avx2"))) std::int32_t largest_bits_avx2(const float* x, std::size_t n) {
    const __m256i mask = _mm256_set1_epi32(0x7FFFFFFF);
    __m256i most = _mm256_setzero_si256();
    for (std::size_t j = 0; j < n; j += 8)
        most = _mm256_max_epi32(
            most, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + j)), mask));
    __m128i m = _mm_max_epi32(_mm256_castsi256_si128(most), _mm256_extracti128_si256(most, 1));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
    return _mm_cvtsi128_si32(m);
}

/// Eight E8M0 codes, as 32-bit lanes, of the values at `x`: x · scale (exact), rounded to an
/// integer by adding and subtracting `magic` (1.5 × 2^23), clamped to [lo, hi], truncated. No fused
/// multiply-add: each step rounds as the portable loop's.
__attribute__((target("avx2"), always_inline)) inline __m256i e8m0_lanes(const float* x, __m256 scale,
                                                                         __m256 magic, __m256 lo, __m256 hi) {
    const __m256 y = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x), scale), magic), magic);
    return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(y, lo), hi));
}

/// The E8M0 codes of `n` values (n a multiple of 32) at scale 2^-k given as `inverse`, as the
/// portable loop computes them (e8m0_lanes), 32 codes per store.
__attribute__((target("avx2"))) void e8m0_codes_avx2(const float* x, std::size_t n, float inverse, float top,
                                                     std::int8_t* codes) {
    const __m256 scale = _mm256_set1_ps(inverse), magic = _mm256_set1_ps(0x1.8p23f), hi = _mm256_set1_ps(top),
                 lo = _mm256_set1_ps(-top);
    for (std::size_t j = 0; j < n; j += 32) {
        // The packs work within 128-bit halves, so the 16-bit and then 8-bit codes come out as
        // eight 4-code pieces out of order; the permutation puts them back.
        const __m256i a = _mm256_packs_epi32(e8m0_lanes(x + j, scale, magic, lo, hi),
                                             e8m0_lanes(x + j + 8, scale, magic, lo, hi));
        const __m256i b = _mm256_packs_epi32(e8m0_lanes(x + j + 16, scale, magic, lo, hi),
                                             e8m0_lanes(x + j + 24, scale, magic, lo, hi));
        const __m256i ordered =
            _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + j), ordered);
    }
}

/// Quantises one group of n values (n a multiple of 32) into `codes` and writes its scale bytes
/// (1 or 2). The loops are written so the compiler vectorises them; every step is exact, so the
/// codes are those of the rule in weights.hpp:
/// - the largest magnitude is the largest of the values' bits without sign (for finite floats
///   the integer order of those bits is the order of the magnitudes, and anything at or above
///   0x7F800000 is an infinity or a NaN);
/// - E8M0: x * 2^-k is exact in f32 whenever it is at least 2^-126 (k >= -127 and |x| <= amax
///   keep it below 2^8), and below that it rounds to code 0 either way; adding and subtracting
///   1.5 x 2^23 rounds an f32 of magnitude below 2^22 to the nearest integer, ties to even.
void quantize_group(const float* x, std::size_t n, const WeightFormat& f, std::int8_t* codes,
                    std::byte* scale) {
    const int q = max_weight_code(f.codes);
    const bool avx2 = use_avx2();
    std::int32_t most = 0;
    if (avx2)
        most = largest_bits_avx2(x, n);
    else
        for (std::size_t j = 0; j < n; ++j)
            most =
                std::max(most, static_cast<std::int32_t>(std::bit_cast<std::uint32_t>(x[j]) & 0x7FFFFFFFu));
    const bool finite = most < 0x7F800000;
    auto put_f16 = [&](F16 h) {
        scale[0] = static_cast<std::byte>(h.bits & 0xFF);
        scale[1] = static_cast<std::byte>(h.bits >> 8);
    };
    if (!finite || most == 0) {
        std::fill(codes, codes + n, 0);
        if (f.scale == ScaleFormat::E8M0)
            scale[0] = finite ? std::byte{0} : std::byte{0xFF}; // 0: k = -127
        else
            put_f16(finite ? F16{0} : f16_nan);
        return;
    }
    const float amax = std::bit_cast<float>(static_cast<std::uint32_t>(most));
    if (f.scale == ScaleFormat::E8M0) {
        const int k = most >= 0x00800000 ? e8m0_exponent_normal(static_cast<std::uint32_t>(most), q)
                                         : e8m0_exponent(amax, q);
        scale[0] = static_cast<std::byte>(k + 127);
        const float inverse = float_power_of_two(-k); // k in [-127, 122]: a normal f32
        const float magic = 0x1.8p23f, top = static_cast<float>(q);
        if (avx2) return e8m0_codes_avx2(x, n, inverse, top, codes);
        for (std::size_t j = 0; j < n; ++j) {
            const float y = (x[j] * inverse + magic) - magic;
            codes[j] = static_cast<std::int8_t>(static_cast<std::int32_t>(std::clamp(y, -top, top)));
        }
        return;
    }
    // F16: as quantize_f16_group, its largest magnitude known.
    F16 d = f16_from_double(static_cast<double>(amax) / q);
    if (d.bits >= 0x7C00) d = f16_max;
    put_f16(d);
    const double dv = to_f32(d);
    if (dv == 0) {
        std::fill(codes, codes + n, 0);
        return;
    }
    const double top = q;
    for (std::size_t j = 0; j < n; ++j)
        codes[j] = static_cast<std::int8_t>(
            static_cast<std::int32_t>(std::clamp(round_even(static_cast<double>(x[j]) / dv), -top, top)));
}

} // namespace

F16 quantize_f16_group(std::span<const float> x, int max_code, std::span<std::int8_t> codes) {
    std::fill(codes.begin(), codes.end(), std::int8_t{0});
    double amax = 0;
    for (float v : x) {
        if (!std::isfinite(v)) return f16_nan;
        amax = std::max(amax, static_cast<double>(std::abs(v)));
    }
    // amax / q rounded to double, then to f16: no double rounding, since amax / q is never within
    // 2^-31 (relative) of an f16 tie unless on it (amax has 24 bits, q at most 7).
    F16 d = f16_from_double(amax / max_code);
    if (d.bits >= 0x7C00) d = f16_max; // overflow: the largest finite f16
    const double dv = to_f32(d);
    if (dv == 0) return d;
    // x / d in double is the exact quotient rounded once; it is never within 2^-36 of a half-integer
    // unless on it, so rounding it to an integer is the exact quotient's rounding.
    const double q = max_code;
    for (std::size_t j = 0; j < x.size(); ++j)
        codes[j] = static_cast<std::int8_t>(std::clamp(round_even(static_cast<double>(x[j]) / dv), -q, q));
    return d;
}

std::string_view name(CodeFormat c) {
    return c == CodeFormat::Int8 ? "int8" : "int4";
}
std::string_view name(ScaleFormat s) {
    return s == ScaleFormat::E8M0 ? "e8m0" : "f16";
}
std::string to_string(const WeightFormat& f) {
    return std::string(name(f.codes)) + "/" + std::string(name(f.scale)) + "/g" + std::to_string(f.group);
}

int max_weight_code(CodeFormat c) {
    return c == CodeFormat::Int8 ? 127 : 7;
}

MatrixLayout matrix_layout(std::size_t rows, std::size_t cols, WeightFormat format, std::size_t row_align) {
    if (format.group == 0 || format.group % DOT_BLOCK != 0)
        throw Error("weight format " + to_string(format) +
                    ": the group must be a positive multiple of 32 values, not " +
                    std::to_string(format.group));
    if (row_align == 0 || !std::has_single_bit(row_align))
        throw Error("matrix layout: the row alignment must be a power of two bytes, not " +
                    std::to_string(row_align));
    return MatrixLayout{rows, cols, format, row_align};
}

GroupScale decode_e8m0(std::uint8_t x) {
    if (x == 0xFF) return {0, 0, true};
    return {1, static_cast<int>(x) - 127, false};
}

GroupScale decode_f16_scale(F16 h) {
    if (is_nonfinite(h)) return {0, 0, true};
    F16Parts p = parts(h);
    return {p.significand, p.exponent, false};
}

MatrixView::MatrixView(const MatrixLayout& layout, std::span<const std::byte> bytes, std::string_view what)
    : layout_(layout), bytes_(bytes) {
    if (bytes.size() != layout.bytes())
        throw Error(std::string(what) + ": a " + std::to_string(layout.rows) + " x " +
                    std::to_string(layout.cols) + " " + to_string(layout.format) + " matrix takes " +
                    std::to_string(layout.bytes()) + " bytes, found " + std::to_string(bytes.size()));
}

int MatrixView::code(std::size_t r, std::size_t c) const {
    auto codes = this->codes(r);
    if (layout_.format.codes == CodeFormat::Int8) return static_cast<std::int8_t>(codes[c]);
    const std::size_t block = c / DOT_BLOCK, j = c % DOT_BLOCK;
    const auto byte = static_cast<std::uint8_t>(codes[block * 16 + j % 16]);
    const int nibble = j < 16 ? (byte & 0xF) : (byte >> 4);
    return nibble >= 8 ? nibble - 16 : nibble;
}

GroupScale MatrixView::scale(std::size_t r, std::size_t g) const {
    auto s = scales(r);
    if (layout_.format.scale == ScaleFormat::E8M0) return decode_e8m0(static_cast<std::uint8_t>(s[g]));
    const auto bits = static_cast<std::uint16_t>(static_cast<std::uint8_t>(s[2 * g]) |
                                                 static_cast<std::uint8_t>(s[2 * g + 1]) << 8);
    return decode_f16_scale(F16{bits});
}

std::vector<float> MatrixView::dequantize_row(std::size_t r) const {
    std::vector<float> out(layout_.cols);
    for (std::size_t c = 0; c < layout_.cols; ++c) {
        GroupScale s = scale(r, c / layout_.format.group);
        if (s.nan) {
            out[c] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        const long long v = static_cast<long long>(code(r, c)) * s.significand; // < 2^18: exact in f32
        out[c] = round_to_f32(v < 0, static_cast<unsigned __int128>(v < 0 ? -v : v), s.exponent);
    }
    return out;
}

void quantize_into(std::span<const float> values, const MatrixLayout& layout, std::span<std::byte> out) {
    if (layout.cols == 0 || values.size() != layout.rows * layout.cols)
        throw Error("weight quantiser: a " + std::to_string(layout.rows) + " x " +
                    std::to_string(layout.cols) + " matrix takes " +
                    std::to_string(layout.rows * layout.cols) + " values, found " +
                    std::to_string(values.size()));
    if (out.size() != layout.bytes())
        throw Error("weight quantiser: the matrix takes " + std::to_string(layout.bytes()) +
                    " bytes, the output has " + std::to_string(out.size()));
    const WeightFormat& f = layout.format;
    const std::size_t scale_size = f.scale == ScaleFormat::E8M0 ? 1 : 2;
    const std::size_t stride = layout.row_stride(), used = layout.scale_bytes() + layout.code_bytes();
    std::vector<float> group(f.group);
    std::vector<std::int8_t> codes(f.group);
    for (std::size_t r = 0; r < layout.rows; ++r) {
        std::byte* row_scales = out.data() + r * stride;
        std::byte* row = row_scales + layout.scale_bytes(); // the codes
        std::fill(row_scales + used, row_scales + stride, std::byte{0});
        for (std::size_t g = 0; g < layout.groups(); ++g) {
            const std::size_t first = g * f.group, n = std::min(f.group, layout.cols - first);
            const float* x = values.data() + r * layout.cols + first;
            if (n < f.group) { // the last group of a row: zero padding, zero codes
                std::copy_n(x, n, group.begin());
                std::fill(group.begin() + static_cast<std::ptrdiff_t>(n), group.end(), 0.0f);
                x = group.data();
            }
            std::int8_t* c =
                f.codes == CodeFormat::Int8 ? reinterpret_cast<std::int8_t*>(row + first) : codes.data();
            quantize_group(x, f.group, f, c, row_scales + g * scale_size);
            if (f.codes == CodeFormat::Int8) continue;
            for (std::size_t b = 0; b < f.group / DOT_BLOCK; ++b)
                for (std::size_t j = 0; j < 16; ++j) {
                    const auto lo = static_cast<std::uint8_t>(codes[b * DOT_BLOCK + j]) & 0xF;
                    const auto hi = static_cast<std::uint8_t>(codes[b * DOT_BLOCK + j + 16]) & 0xF;
                    row[(first + b * DOT_BLOCK) / 2 + j] = static_cast<std::byte>(lo | hi << 4);
                }
        }
    }
}

QuantizedMatrix quantize_matrix(std::span<const float> values, std::size_t cols, WeightFormat format,
                                std::size_t row_align) {
    if (cols == 0 || values.size() % cols != 0)
        throw Error("weight quantiser: " + std::to_string(values.size()) + " values do not make rows of " +
                    std::to_string(cols) + " columns");
    QuantizedMatrix m{matrix_layout(values.size() / cols, cols, format, row_align), {}};
    m.bytes.resize(m.layout.bytes());
    quantize_into(values, m.layout, m.bytes);
    return m;
}

QuantizedMatrix quantize_matrix(std::span<const F16> values, std::size_t cols, WeightFormat format,
                                std::size_t row_align) {
    std::vector<float> f(values.size());
    std::transform(values.begin(), values.end(), f.begin(), [](F16 h) { return to_f32(h); });
    return quantize_matrix(f, cols, format, row_align);
}

QuantizedMatrix quantize_matrix(std::span<const BF16> values, std::size_t cols, WeightFormat format,
                                std::size_t row_align) {
    std::vector<float> f(values.size());
    std::transform(values.begin(), values.end(), f.begin(), [](BF16 h) { return to_f32(h); });
    return quantize_matrix(f, cols, format, row_align);
}

} // namespace cardsim::numerics
