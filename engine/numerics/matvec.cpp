#include "engine/numerics/matvec.hpp"

#include "engine/error.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <cstring>
#include <immintrin.h>
#include <limits>

namespace cardsim::numerics {
namespace {

constexpr float nan_out() {
    return std::numeric_limits<float>::quiet_NaN();
}

// ---- integer dots: out[p * chunks + c] = sum over chunk c of weight code x plane p's code --------

/// Chunk c of a row's codes as 32 int8 codes.
inline void unpack_chunk(const std::byte* codes, CodeFormat f, std::size_t c, std::int8_t* w) {
    if (f == CodeFormat::Int8) {
        std::memcpy(w, codes + DOT_BLOCK * c, DOT_BLOCK);
        return;
    }
    for (std::size_t j = 0; j < 16; ++j) {
        const auto b = static_cast<std::uint8_t>(codes[16 * c + j]);
        w[j] = static_cast<std::int8_t>(((b & 0xF) ^ 8) - 8);
        w[j + 16] = static_cast<std::int8_t>(((b >> 4) ^ 8) - 8);
    }
}

template <class A>
void dots_portable(const std::byte* codes, CodeFormat f, const A* act, int planes, std::size_t padded,
                   std::size_t chunks, std::int32_t* out) {
    std::int8_t w[DOT_BLOCK];
    for (std::size_t c = 0; c < chunks; ++c) {
        unpack_chunk(codes, f, c, w);
        for (int p = 0; p < planes; ++p) {
            const A* a = act + p * padded + DOT_BLOCK * c;
            std::int32_t s = 0;
            for (std::size_t j = 0; j < DOT_BLOCK; ++j)
                s += static_cast<std::int32_t>(w[j]) * a[j];
            out[p * chunks + c] = s;
        }
    }
}

/// Chunk c's 32 weight codes in a vector of int8 (int4 unpacked: columns 0..15 low half).
template <CodeFormat F>
__attribute__((target("avx2"), always_inline)) inline __m256i load_weights(const std::byte* codes,
                                                                           std::size_t c) {
    if constexpr (F == CodeFormat::Int8) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + DOT_BLOCK * c));
    } else {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16 * c));
        const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
        __m128i lo = _mm_and_si128(x, mask), hi = _mm_and_si128(_mm_srli_epi16(x, 4), mask);
        lo = _mm_sub_epi8(_mm_xor_si128(lo, eight), eight);
        hi = _mm_sub_epi8(_mm_xor_si128(hi, eight), eight);
        return _mm256_set_m128i(hi, lo);
    }
}

/// 8 int32 partial sums of w . a over 32 values, a int8 codes within +-127 (so |w| x a fits maddubs).
__attribute__((target("avx2"), always_inline)) inline __m256i dot_narrow(__m256i w, const std::int8_t* a) {
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(av, w));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

/// 8 int32 partial sums of w . a over 32 values, a int16 codes.
__attribute__((target("avx2"), always_inline)) inline __m256i dot_wide(__m256i w, const std::int16_t* a) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w, 1));
    const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 16));
    return _mm256_add_epi32(_mm256_madd_epi16(w0, a0), _mm256_madd_epi16(w1, a1));
}

/// The 8 horizontal sums of v[0..7], in order.
__attribute__((target("avx2"), always_inline)) inline __m256i reduce8(const __m256i* v) {
    const __m256i t0 = _mm256_hadd_epi32(v[0], v[1]), t1 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i t2 = _mm256_hadd_epi32(v[4], v[5]), t3 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

__attribute__((target("avx2"), always_inline)) inline std::int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

template <CodeFormat F, bool Narrow, int Planes>
__attribute__((target("avx2"))) void dots_avx2(const std::byte* codes, const void* act, std::size_t padded,
                                               std::size_t chunks, std::int32_t* out) {
    constexpr int per = 8 / Planes; // chunks per group of 8 vectors
    const auto* a8 = static_cast<const std::int8_t*>(act);
    const auto* a16 = static_cast<const std::int16_t*>(act);
    std::size_t c = 0;
    for (; c + per <= chunks; c += per) {
        __m256i v[8];
        for (int i = 0; i < per; ++i) {
            const __m256i w = load_weights<F>(codes, c + i);
            for (int p = 0; p < Planes; ++p) {
                if constexpr (Narrow)
                    v[i * Planes + p] = dot_narrow(w, a8 + p * padded + DOT_BLOCK * (c + i));
                else
                    v[i * Planes + p] = dot_wide(w, a16 + p * padded + DOT_BLOCK * (c + i));
            }
        }
        alignas(32) std::int32_t sums[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(sums), reduce8(v));
        for (int i = 0; i < per; ++i)
            for (int p = 0; p < Planes; ++p)
                out[p * chunks + c + i] = sums[i * Planes + p];
    }
    for (; c < chunks; ++c) {
        const __m256i w = load_weights<F>(codes, c);
        for (int p = 0; p < Planes; ++p) {
            if constexpr (Narrow)
                out[p * chunks + c] = hsum(dot_narrow(w, a8 + p * padded + DOT_BLOCK * c));
            else
                out[p * chunks + c] = hsum(dot_wide(w, a16 + p * padded + DOT_BLOCK * c));
        }
    }
}

template <CodeFormat F, bool Narrow>
void dots_avx2_planes(const std::byte* codes, const void* act, int planes, std::size_t padded,
                      std::size_t chunks, std::int32_t* out) {
    switch (planes) {
    case 1:
        return dots_avx2<F, Narrow, 1>(codes, act, padded, chunks, out);
    case 2:
        return dots_avx2<F, Narrow, 2>(codes, act, padded, chunks, out);
    default:
        return dots_avx2<F, Narrow, 4>(codes, act, padded, chunks, out);
    }
}

void row_dots(const std::byte* codes, CodeFormat f, const PreparedActivation& a, std::int32_t* out) {
    if (use_avx2()) {
        const void* act = a.narrow ? static_cast<const void*>(a.codes8.data()) : a.codes16.data();
        if (f == CodeFormat::Int8) {
            if (a.narrow)
                dots_avx2_planes<CodeFormat::Int8, true>(codes, act, a.planes, a.padded_cols, a.chunks, out);
            else
                dots_avx2_planes<CodeFormat::Int8, false>(codes, act, a.planes, a.padded_cols, a.chunks, out);
        } else {
            if (a.narrow)
                dots_avx2_planes<CodeFormat::Int4, true>(codes, act, a.planes, a.padded_cols, a.chunks, out);
            else
                dots_avx2_planes<CodeFormat::Int4, false>(codes, act, a.planes, a.padded_cols, a.chunks, out);
        }
        return;
    }
    if (a.narrow)
        dots_portable(codes, f, a.codes8.data(), a.planes, a.padded_cols, a.chunks, out);
    else
        dots_portable(codes, f, a.codes16.data(), a.planes, a.padded_cols, a.chunks, out);
}

// ---- the sum: no term can leave the window, so an i64 over the lowest exponent holds it exactly --

/// sum over planes and chunks of (d x m) << (exponent + e_w + shift - base), every shift clamped to
/// [0, 62] (a clamped shift only ever meets a zero term).
template <bool UnitScale>
[[gnu::always_inline]] inline std::int64_t
accumulate_body(const std::int32_t* dots, const PreparedActivation& a, const std::int32_t* ew,
                const std::int32_t* mw, int base) {
    std::int64_t acc = 0;
    const std::size_t chunks = a.chunks;
    for (int p = 0; p < a.planes; ++p) {
        const std::int32_t* d = dots + p * chunks;
        const std::int32_t* e = a.exponent.data() + a.plane_word[p] * chunks;
        const int offset = a.plane_shift[p] - base;
        for (std::size_t c = 0; c < chunks; ++c) {
            const int k = std::clamp(e[c] + ew[c] + offset, 0, 62);
            const std::int64_t t = UnitScale ? std::int64_t{d[c]} : std::int64_t{d[c]} * mw[c];
            acc += t << k;
        }
    }
    return acc;
}

template <bool UnitScale>
__attribute__((target("avx2"))) std::int64_t
accumulate_avx2(const std::int32_t* dots, const PreparedActivation& a, const std::int32_t* ew,
                const std::int32_t* mw, int base) {
    return accumulate_body<UnitScale>(dots, a, ew, mw, base);
}

template <bool UnitScale>
std::int64_t accumulate(const std::int32_t* dots, const PreparedActivation& a, const std::int32_t* ew,
                        const std::int32_t* mw, int base) {
    if (use_avx2()) return accumulate_avx2<UnitScale>(dots, a, ew, mw, base);
    return accumulate_body<UnitScale>(dots, a, ew, mw, base);
}

/// The contract's terms of one row (one per chunk and word), into `terms`.
void row_terms(const std::int32_t* dots, const PreparedActivation& a, const std::int32_t* ew,
               const std::int32_t* mw, std::vector<Term>& terms) {
    terms.clear();
    const int parts = a.planes / a.words;
    for (int w = 0; w < a.words; ++w)
        for (std::size_t c = 0; c < a.chunks; ++c) {
            std::int64_t d = 0;
            for (int part = 0; part < parts; ++part) {
                const int p = w * parts + part;
                d += std::int64_t{dots[p * a.chunks + c]} << a.plane_shift[p];
            }
            terms.push_back({d * mw[c], a.exponent[w * a.chunks + c] + ew[c]});
        }
}

/// The general window sum of one row's terms.
float window_row(const std::int32_t* dots, const PreparedActivation& a, const std::int32_t* ew,
                 const std::int32_t* mw, std::vector<Term>& terms) {
    row_terms(dots, a, ew, mw, terms);
    return window_sum(terms);
}

// ---- the fused AVX2 path for narrow codes: dots, exponents, shifts and the i64 sum in one pass ---

/// Chunk exponents of the weights as 8 int32 lanes in the order of reduce8's sums (chunk-major,
/// each chunk repeated Planes times): E8M0 bytes minus 127, or f16 exponents.
template <int Planes>
__attribute__((target("avx2"), always_inline)) inline __m256i lanes_of(const std::int32_t* per_chunk,
                                                                       std::size_t c) {
    if constexpr (Planes == 1) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(per_chunk + c));
    } else {
        const __m256i four =
            _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(per_chunk + c)));
        return _mm256_permutevar8x32_epi32(four, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    }
}

/// sum over chunks and planes of (d x m) << clamp(exponent lane + e_w - base, 0, 62) as an i64
/// (exact: the caller checked that no term leaves the window nor the i64). Narrow planes with any
/// scale (|d x m| < 2^31), or int16 planes with E8M0 scales (|d| < 2^28).
template <CodeFormat F, bool UnitScale, int Planes, bool Narrow>
__attribute__((target("avx2"))) std::int64_t fused_row(const std::byte* codes, const PreparedActivation& a,
                                                       const std::int32_t* ew, const std::int32_t* mw,
                                                       int base) {
    constexpr int per = 8 / Planes;
    static_assert(Narrow || UnitScale, "int16 planes times f16 significands overflow 32-bit lanes");
    const std::int8_t* act = a.codes8.data();
    const std::int16_t* act16 = a.codes16.data();
    const std::size_t padded = a.padded_cols, chunks = a.chunks;
    const std::int32_t* lane_e = a.lane_exponent.data();
    const __m256i vbase = _mm256_set1_epi32(base), zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(62);
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    std::size_t c = 0;
    for (; c + per <= chunks; c += per, lane_e += 8) {
        __m256i v[8];
        for (int i = 0; i < per; ++i) {
            const __m256i w = load_weights<F>(codes, c + i);
            for (int p = 0; p < Planes; ++p) {
                if constexpr (Narrow)
                    v[i * Planes + p] = dot_narrow(w, act + p * padded + DOT_BLOCK * (c + i));
                else
                    v[i * Planes + p] = dot_wide(w, act16 + p * padded + DOT_BLOCK * (c + i));
            }
        }
        __m256i d = reduce8(v);
        if constexpr (!UnitScale) d = _mm256_mullo_epi32(d, lanes_of<Planes>(mw, c)); // |d x m| < 2^31
        __m256i k = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lane_e)),
                                     lanes_of<Planes>(ew, c));
        k = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(k, vbase), zero), top);
        const __m256i d0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(d));
        const __m256i d1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(d, 1));
        const __m256i k0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(k));
        const __m256i k1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(k, 1));
        acc0 = _mm256_add_epi64(acc0, _mm256_sllv_epi64(d0, k0));
        acc1 = _mm256_add_epi64(acc1, _mm256_sllv_epi64(d1, k1));
    }
    alignas(32) std::int64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(acc0, acc1));
    std::int64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; c < chunks; ++c) {
        const __m256i w = load_weights<F>(codes, c);
        for (int p = 0; p < Planes; ++p) {
            const std::int64_t d = Narrow ? hsum(dot_narrow(w, act + p * padded + DOT_BLOCK * c))
                                          : hsum(dot_wide(w, act16 + p * padded + DOT_BLOCK * c));
            const int k =
                std::clamp(a.exponent[a.plane_word[p] * chunks + c] + a.plane_shift[p] + ew[c] - base, 0, 62);
            sum += (UnitScale ? d : d * mw[c]) << k;
        }
    }
    return sum;
}

template <CodeFormat F, bool UnitScale, bool Narrow>
std::int64_t fused_planes(const std::byte* codes, const PreparedActivation& a, const std::int32_t* ew,
                          const std::int32_t* mw, int base) {
    return a.planes == 2 ? fused_row<F, UnitScale, 2, Narrow>(codes, a, ew, mw, base)
                         : fused_row<F, UnitScale, 1, Narrow>(codes, a, ew, mw, base);
}

template <CodeFormat F>
std::int64_t fused_format(const std::byte* codes, bool unit, const PreparedActivation& a,
                          const std::int32_t* ew, const std::int32_t* mw, int base) {
    if (!a.narrow) return fused_planes<F, true, false>(codes, a, ew, mw, base); // E8M0 only
    return unit ? fused_planes<F, true, true>(codes, a, ew, mw, base)
                : fused_planes<F, false, true>(codes, a, ew, mw, base);
}

std::int64_t fused(const std::byte* codes, CodeFormat f, bool unit, const PreparedActivation& a,
                   const std::int32_t* ew, const std::int32_t* mw, int base) {
    return f == CodeFormat::Int8 ? fused_format<CodeFormat::Int8>(codes, unit, a, ew, mw, base)
                                 : fused_format<CodeFormat::Int4>(codes, unit, a, ew, mw, base);
}

/// A row's scales as per-chunk exponents and significands (ew, mw; chunks + 8 entries, the tail 0),
/// with the exponent range over nonzero scales and whether any is NaN.
struct RowScales {
    bool nan = false;
    int ew_min = std::numeric_limits<int>::max(), ew_max = std::numeric_limits<int>::min();
    std::int32_t m_max = 0;
};

/// decode_row_scales' body: branchless loops the compiler vectorises.
[[gnu::always_inline]] inline RowScales decode_body(const std::uint8_t* scales, const MatrixLayout& l,
                                                    std::int32_t* ew, std::int32_t* mw) {
    RowScales s;
    const std::size_t groups = l.groups(), per_group = l.format.group / DOT_BLOCK;
    if (l.format.scale == ScaleFormat::E8M0) {
        std::uint8_t lo = 0xFF, hi = 0;
        for (std::size_t g = 0; g < groups; ++g) {
            lo = std::min(lo, scales[g]);
            hi = std::max(hi, scales[g]);
        }
        s.nan = hi == 0xFF;
        s.ew_min = lo - 127, s.ew_max = hi - 127, s.m_max = 1;
        if (per_group == 1) // one chunk a group: a loop the compiler vectorises
            for (std::size_t g = 0; g < groups; ++g)
                ew[g] = scales[g] - 127;
        else
            for (std::size_t g = 0; g < groups; ++g)
                for (std::size_t i = 0; i < per_group; ++i)
                    ew[g * per_group + i] = scales[g] - 127;
        return s;
    }
    // f16: exponent field - 25 (normal) or -24 (subnormal), significand 1024 + fraction or fraction.
    int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min(), any_nan = 0;
    std::int32_t m_max = 0;
    for (std::size_t g = 0; g < groups; ++g) {
        const int h = scales[2 * g] | scales[2 * g + 1] << 8;
        const int field = (h >> 10) & 0x1F, fraction = h & 0x3FF;
        const int magnitude = field == 0 ? fraction : fraction | 0x400;
        const int e = field == 0 ? -24 : field - 25;
        any_nan |= field == 0x1F;
        lo = std::min(lo, magnitude != 0 ? e : std::numeric_limits<int>::max());
        hi = std::max(hi, magnitude != 0 ? e : std::numeric_limits<int>::min());
        m_max = std::max(m_max, magnitude);
        const std::int32_t m = (h & 0x8000) ? -magnitude : magnitude;
        ew[g] = e; // per group first, spread over the chunks below
        mw[g] = m;
    }
    if (per_group > 1)
        for (std::size_t g = groups; g-- > 0;)
            for (std::size_t i = per_group; i-- > 0;) {
                ew[g * per_group + i] = ew[g];
                mw[g * per_group + i] = mw[g];
            }
    s.nan = any_nan != 0, s.ew_min = lo, s.ew_max = hi, s.m_max = m_max;
    return s;
}

/// The f16 scales of a row with one chunk a group, 8 at a time (the tail by decode_body's rule).
__attribute__((target("avx2"))) RowScales decode_f16_avx2(const std::uint8_t* scales, std::size_t groups,
                                                          std::int32_t* ew, std::int32_t* mw) {
    const __m256i fraction_mask = _mm256_set1_epi32(0x3FF), field_mask = _mm256_set1_epi32(0x1F);
    const __m256i implicit = _mm256_set1_epi32(0x400), zero = _mm256_setzero_si256();
    const __m256i sub_e = _mm256_set1_epi32(-24), bias = _mm256_set1_epi32(25),
                  nan_field = _mm256_set1_epi32(0x1F);
    __m256i lo = _mm256_set1_epi32(std::numeric_limits<int>::max()),
            hi = _mm256_set1_epi32(std::numeric_limits<int>::min());
    __m256i m_max = zero, any_nan = zero;
    std::size_t g = 0;
    for (; g + 8 <= groups; g += 8) {
        const __m256i h =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 2 * g)));
        const __m256i field = _mm256_and_si256(_mm256_srli_epi32(h, 10), field_mask);
        const __m256i subnormal = _mm256_cmpeq_epi32(field, zero);
        const __m256i magnitude =
            _mm256_or_si256(_mm256_and_si256(h, fraction_mask), _mm256_andnot_si256(subnormal, implicit));
        const __m256i e = _mm256_blendv_epi8(_mm256_sub_epi32(field, bias), sub_e, subnormal);
        const __m256i negative = _mm256_srai_epi32(_mm256_slli_epi32(h, 16), 31);
        const __m256i m = _mm256_sub_epi32(_mm256_xor_si256(magnitude, negative), negative);
        const __m256i live = _mm256_xor_si256(_mm256_cmpeq_epi32(magnitude, zero), _mm256_set1_epi32(-1));
        lo = _mm256_blendv_epi8(lo, _mm256_min_epi32(lo, e), live);
        hi = _mm256_blendv_epi8(hi, _mm256_max_epi32(hi, e), live);
        m_max = _mm256_max_epi32(m_max, magnitude);
        any_nan = _mm256_or_si256(any_nan, _mm256_cmpeq_epi32(field, nan_field));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(ew + g), e);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(mw + g), m);
    }
    alignas(32) int l8[8], h8[8], m8[8], n8[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(l8), lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(h8), hi);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m8), m_max);
    _mm256_store_si256(reinterpret_cast<__m256i*>(n8), any_nan);
    RowScales s;
    for (int i = 0; i < 8; ++i) {
        s.ew_min = std::min(s.ew_min, l8[i]);
        s.ew_max = std::max(s.ew_max, h8[i]);
        s.m_max = std::max(s.m_max, m8[i]);
        s.nan = s.nan || n8[i] != 0;
    }
    for (; g < groups; ++g) { // the tail, one at a time
        const int h = scales[2 * g] | scales[2 * g + 1] << 8;
        const int field = (h >> 10) & 0x1F, magnitude = field == 0 ? (h & 0x3FF) : (h & 0x3FF) | 0x400;
        const int e = field == 0 ? -24 : field - 25;
        s.nan = s.nan || field == 0x1F;
        if (magnitude != 0) {
            s.ew_min = std::min(s.ew_min, e);
            s.ew_max = std::max(s.ew_max, e);
        }
        s.m_max = std::max(s.m_max, magnitude);
        ew[g] = e;
        mw[g] = (h & 0x8000) ? -magnitude : magnitude;
    }
    return s;
}

/// E8M0 scales, one chunk a group: 16 bytes at a time (min, max, and the exponents widened).
__attribute__((target("avx2"))) RowScales decode_e8m0_avx2(const std::uint8_t* scales, std::size_t groups,
                                                           std::int32_t* ew) {
    __m128i lo = _mm_set1_epi8(static_cast<char>(0xFF)), hi = _mm_setzero_si128();
    const __m256i bias = _mm256_set1_epi32(127);
    std::size_t g = 0;
    for (; g + 16 <= groups; g += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + g));
        lo = _mm_min_epu8(lo, v);
        hi = _mm_max_epu8(hi, v);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(ew + g),
                            _mm256_sub_epi32(_mm256_cvtepu8_epi32(v), bias));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(ew + g + 8),
                            _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), bias));
    }
    alignas(16) std::uint8_t l16[16], h16[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(l16), lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(h16), hi);
    std::uint8_t mn = 0xFF, mx = 0;
    for (int i = 0; i < 16; ++i) {
        mn = std::min(mn, l16[i]);
        mx = std::max(mx, h16[i]);
    }
    for (; g < groups; ++g) {
        mn = std::min(mn, scales[g]);
        mx = std::max(mx, scales[g]);
        ew[g] = scales[g] - 127;
    }
    RowScales s;
    s.nan = mx == 0xFF;
    s.ew_min = mn - 127, s.ew_max = mx - 127, s.m_max = 1;
    return s;
}

__attribute__((target("avx2"))) RowScales decode_avx2(const std::uint8_t* scales, const MatrixLayout& l,
                                                      std::int32_t* ew, std::int32_t* mw) {
    if (l.format.scale == ScaleFormat::F16 && l.format.group == DOT_BLOCK)
        return decode_f16_avx2(scales, l.groups(), ew, mw);
    if (l.format.scale == ScaleFormat::E8M0 && l.format.group == DOT_BLOCK)
        return decode_e8m0_avx2(scales, l.groups(), ew);
    return decode_body(scales, l, ew, mw);
}

RowScales decode_row_scales(const std::uint8_t* scales, const MatrixLayout& l, std::int32_t* ew,
                            std::int32_t* mw) {
    if (use_avx2()) return decode_avx2(scales, l, ew, mw);
    return decode_body(scales, l, ew, mw);
}

} // namespace

PreparedActivation prepare(const QuantizedActivation& q, const MatrixLayout& layout) {
    if (q.length != layout.cols)
        throw Error("matvec: the activation row has " + std::to_string(q.length) + " values, the " +
                    std::to_string(layout.rows) + " x " + std::to_string(layout.cols) + " matrix takes " +
                    std::to_string(layout.cols));
    if (q.block % DOT_BLOCK != 0 && q.block < q.length)
        throw Error(
            "matvec: activation blocks of " + std::to_string(q.block) +
            " values do not cover whole chunks of 32 (a multiple of 32, or the whole row, is needed)");
    PreparedActivation a;
    a.cols = q.length;
    a.padded_cols = layout.padded_cols();
    a.chunks = a.padded_cols / DOT_BLOCK;
    a.words = q.words;
    std::int64_t max_code = 0;
    for (std::int32_t c : q.codes)
        max_code = std::max<std::int64_t>(max_code, c < 0 ? -std::int64_t{c} : c);
    a.max_code = max_code;
    a.narrow = max_code <= 127;
    const int parts = max_code < (1 << 15) ? 1 : 2;
    a.planes = a.words * parts;
    for (int w = 0; w < a.words; ++w)
        for (int part = 0; part < parts; ++part) {
            a.plane_word.push_back(w);
            a.plane_shift.push_back(parts == 2 && part == 1 ? 12 : 0);
        }
    if (a.narrow)
        a.codes8.assign(a.planes * a.padded_cols, 0);
    else
        a.codes16.assign(a.planes * a.padded_cols, 0);
    for (int w = 0; w < a.words; ++w)
        for (std::size_t j = 0; j < a.cols; ++j) {
            const std::int32_t c = q.code(w, j);
            if (a.narrow)
                a.codes8[w * a.padded_cols + j] = static_cast<std::int8_t>(c);
            else if (parts == 1)
                a.codes16[w * a.padded_cols + j] = static_cast<std::int16_t>(c);
            else {
                a.codes16[(2 * w) * a.padded_cols + j] = static_cast<std::int16_t>(c & 0xFFF);
                a.codes16[(2 * w + 1) * a.padded_cols + j] = static_cast<std::int16_t>(c >> 12);
            }
        }
    a.exponent.assign(a.words * a.chunks, 0);
    a.live.assign(a.words * a.chunks, 0);
    a.exponent_min = std::numeric_limits<int>::max();
    a.exponent_max = std::numeric_limits<int>::min();
    for (std::size_t b = 0; b < q.blocks(); ++b)
        if (q.nonfinite(b)) a.nonfinite = true;
    for (int w = 0; w < a.words; ++w)
        for (std::size_t c = 0; c < a.chunks; ++c) {
            const std::size_t first = c * DOT_BLOCK;
            if (first >= a.cols) continue; // padding: zero codes
            const int e = q.exponent(w, first / q.block);
            a.exponent[w * a.chunks + c] = e;
            bool live = false;
            for (std::size_t j = first; j < std::min(a.cols, first + DOT_BLOCK); ++j)
                live = live || q.code(w, j) != 0;
            a.live[w * a.chunks + c] = live;
            if (live) {
                a.any_live = true;
                a.exponent_min = std::min(a.exponent_min, e);
                a.exponent_max = std::max(a.exponent_max, e);
            }
        }
    if (a.planes <= 2) { // the fused kernel's lanes
        const std::size_t per = 8 / static_cast<std::size_t>(a.planes);
        for (std::size_t c = 0; c + per <= a.chunks; c += per)
            for (std::size_t i = 0; i < per; ++i)
                for (int p = 0; p < a.planes; ++p)
                    a.lane_exponent.push_back(a.exponent[a.plane_word[p] * a.chunks + c + i] +
                                              a.plane_shift[p]);
    }
    return a;
}

void matvec(const MatrixView& m, const PreparedActivation& a, std::span<float> out, std::size_t first_row) {
    const MatrixLayout& l = m.layout();
    if (a.cols != l.cols || a.padded_cols != l.padded_cols())
        throw Error("matvec: the activation was prepared for " + std::to_string(a.cols) +
                    " columns, the matrix has " + std::to_string(l.cols));
    if (first_row + out.size() > l.rows)
        throw Error("matvec: rows " + std::to_string(first_row) + ".." +
                    std::to_string(first_row + out.size()) + " of a matrix of " + std::to_string(l.rows) +
                    " rows");
    if (a.nonfinite) {
        std::fill(out.begin(), out.end(), nan_out());
        return;
    }
    const bool unit = l.format.scale == ScaleFormat::E8M0;
    const std::int64_t max_weight = l.format.codes == CodeFormat::Int8 ? 128 : 8;
    const int count_bits = bit_length(static_cast<unsigned __int128>(a.chunks * a.planes));
    std::vector<std::int32_t> dots(a.planes * a.chunks), ew(a.chunks + 8, 0), mw(a.chunks + 8, 1);
    const bool fused_ok = use_avx2() && a.planes <= 2 && (a.narrow || unit);
    std::vector<Term> terms;
    for (std::size_t k = 0; k < out.size(); ++k) {
        const std::size_t r = first_row + k;
        const RowScales rs = decode_row_scales(reinterpret_cast<const std::uint8_t*>(m.scales(r).data()), l,
                                               ew.data(), mw.data());
        const bool nan = rs.nan;
        const int ew_min = rs.ew_min, ew_max = rs.ew_max;
        const std::int32_t m_max = rs.m_max;
        if (nan) {
            out[k] = nan_out();
            continue;
        }
        if (!a.any_live || m_max == 0) {
            out[k] = 0.0f;
            continue;
        }
        const int base = a.exponent_min + ew_min;
        const int span = a.exponent_max + ew_max - base;
        const int bound_bits =
            bit_length(static_cast<unsigned __int128>(DOT_BLOCK * max_weight * a.max_code * m_max));
        const bool in_window = span + bound_bits <= WINDOW_PLACES && span + bound_bits + 1 + count_bits <= 63;
        if (in_window && fused_ok) {
            const std::int64_t acc =
                fused(m.codes(r).data(), l.format.codes, unit, a, ew.data(), mw.data(), base);
            const bool negative = acc < 0;
            out[k] = round_to_f32(negative, static_cast<unsigned __int128>(negative ? -acc : acc), base);
            continue;
        }
        row_dots(m.codes(r).data(), l.format.codes, a, dots.data());
        if (in_window) {
            const std::int64_t acc = unit ? accumulate<true>(dots.data(), a, ew.data(), mw.data(), base)
                                          : accumulate<false>(dots.data(), a, ew.data(), mw.data(), base);
            const bool negative = acc < 0;
            out[k] = round_to_f32(negative, static_cast<unsigned __int128>(negative ? -acc : acc), base);
        } else {
            out[k] = window_row(dots.data(), a, ew.data(), mw.data(), terms);
        }
    }
}

void matvec_partial(const MatrixView& m, const PreparedActivation& a, std::span<PartialSum> out,
                    std::size_t first_row) {
    const MatrixLayout& l = m.layout();
    if (a.cols != l.cols || a.padded_cols != l.padded_cols())
        throw Error("matvec: the activation was prepared for " + std::to_string(a.cols) +
                    " columns, the matrix has " + std::to_string(l.cols));
    if (first_row + out.size() > l.rows)
        throw Error("matvec: rows " + std::to_string(first_row) + ".." +
                    std::to_string(first_row + out.size()) + " of a matrix of " + std::to_string(l.rows) +
                    " rows");
    const bool unit = l.format.scale == ScaleFormat::E8M0;
    const std::int64_t max_weight = l.format.codes == CodeFormat::Int8 ? 128 : 8;
    const int count_bits = bit_length(static_cast<unsigned __int128>(a.chunks * a.planes));
    std::vector<std::int32_t> dots(a.planes * a.chunks), ew(a.chunks + 8, 0), mw(a.chunks + 8, 1);
    const bool fused_ok = use_avx2() && a.planes <= 2 && (a.narrow || unit);
    std::vector<Term> terms;
    for (std::size_t k = 0; k < out.size(); ++k) {
        const std::size_t r = first_row + k;
        PartialSum& p = out[k];
        p = PartialSum{};
        if (a.nonfinite) {
            p.flags = PartialSum::Nan;
            continue;
        }
        const RowScales rs = decode_row_scales(reinterpret_cast<const std::uint8_t*>(m.scales(r).data()), l,
                                               ew.data(), mw.data());
        if (rs.nan) {
            p.flags = PartialSum::Nan;
            continue;
        }
        p.flags = PartialSum::Exact;
        if (!a.any_live || rs.m_max == 0) continue; // no nonzero term
        const int base = a.exponent_min + rs.ew_min;
        const int span = a.exponent_max + rs.ew_max - base;
        const int bound_bits =
            bit_length(static_cast<unsigned __int128>(DOT_BLOCK * max_weight * a.max_code * rs.m_max));
        const bool in_window = span + bound_bits <= WINDOW_PLACES && span + bound_bits + 1 + count_bits <= 63;
        if (in_window) { // the exact sum of every term, in units of 2^base, below 2^63
            std::int64_t acc = 0;
            if (fused_ok) {
                acc = fused(m.codes(r).data(), l.format.codes, unit, a, ew.data(), mw.data(), base);
            } else {
                row_dots(m.codes(r).data(), l.format.codes, a, dots.data());
                acc = unit ? accumulate<true>(dots.data(), a, ew.data(), mw.data(), base)
                           : accumulate<false>(dots.data(), a, ew.data(), mw.data(), base);
            }
            p.sum = acc;
            p.base = base;
            p.top = static_cast<std::int16_t>(base + span + bound_bits);
            continue;
        }
        row_dots(m.codes(r).data(), l.format.codes, a, dots.data());
        row_terms(dots.data(), a, ew.data(), mw.data(), terms);
        p = partial_of(terms);
    }
}

void matvec(const MatrixView& m, const QuantizedActivation& q, std::span<float> out) {
    if (out.size() != m.layout().rows)
        throw Error("matvec: " + std::to_string(out.size()) + " outputs for a matrix of " +
                    std::to_string(m.layout().rows) + " rows");
    matvec(m, prepare(q, m.layout()), out, 0);
}

} // namespace cardsim::numerics
