#include "engine/numerics/activation.hpp"

#include "engine/error.hpp"
#include "engine/numerics/rounding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace cardsim::numerics {
namespace {

/// round_half_even(y) for |y| < 2^51, by the add-and-subtract of 1.5 x 2^52 (the FPU rounds the
/// sum to nearest even, which leaves y's integer part); vectorises, unlike std::rint on base x86-64.
inline double round_even(double y) {
    constexpr double magic = 0x1.8p52;
    return (y + magic) - magic;
}

/// floor(log2 a) of a positive finite double.
inline int floor_log2(double a) {
    const auto u = std::bit_cast<std::uint64_t>(a);
    const int field = static_cast<int>(u >> 52);
    if (field != 0) return field - 1023;
    return -1074 + bit_length(u & ((std::uint64_t{1} << 52) - 1)) - 1;
}

/// 2^e as a double (|e| < 1000).
inline double pow2(int e) {
    return std::ldexp(1.0, e);
}

/// The least e with round_half_even(amax / 2^e) <= max (amax > 0): the e at which amax has
/// bit_length(max) bits above the point, or one more if it rounds past max there.
int least_exponent(double amax, int max) {
    const int e = floor_log2(amax) - (bit_length(static_cast<unsigned>(max)) - 1);
    return round_even(amax * pow2(-e)) <= max ? e : e + 1;
}

/// Quantises one block of `n` values (doubles, each an exact f32 value) into codes, returning the
/// exponent; `residual` gets value - code x 2^e when not null.
int quantize_block(const double* x, std::size_t n, int max, bool is_unsigned, std::int32_t* codes,
                   double* residual) {
    double amax = 0;
    for (std::size_t j = 0; j < n; ++j)
        amax = std::max(amax, std::abs(x[j]));
    if (amax == 0) {
        std::fill(codes, codes + n, 0);
        if (residual) std::fill(residual, residual + n, 0.0);
        return ZERO_BLOCK_EXPONENT;
    }
    const int e = least_exponent(amax, max);
    const double down = pow2(-e), up = pow2(e);
    const double lo = is_unsigned ? 0.0 : -static_cast<double>(max), hi = max;
    for (std::size_t j = 0; j < n; ++j) {
        const double c = std::clamp(round_even(x[j] * down), lo, hi);
        codes[j] = static_cast<std::int32_t>(c);
        if (residual) residual[j] = x[j] - c * up; // exact (see activation.hpp)
    }
    return e;
}

} // namespace

void check(const Scheme& s) {
    if (auto* p = std::get_if<LeastPowerOfTwo>(&s.scale);
        p && (p->significand_bits < 1 || p->significand_bits > 24))
        throw Error("activation scheme " + to_string(s) + ": significand bits must be 1..24");
    if (s.words != 1 && s.words != 2)
        throw Error("activation scheme " + to_string(s) + ": words must be 1 or 2");
    if (is_unsigned(s.scale) && s.words != 1)
        throw Error("activation scheme " + to_string(s) +
                    ": unsigned codes (LeastPowerOfTwoOver255) take one word");
    if (auto* v = std::get_if<Values>(&s.block); v && v->n == 0)
        throw Error("activation scheme " + to_string(s) + ": a block must hold at least one value");
}

QuantizedActivation quantize(std::span<const float> row, const Scheme& scheme, std::size_t weights_group) {
    check(scheme);
    if (std::holds_alternative<OfTheWeights>(scheme.block) && weights_group == 0)
        throw Error("activation scheme " + to_string(scheme) +
                    ": the weights' group must hold at least one value");
    QuantizedActivation q;
    q.length = row.size();
    q.block = block_size(scheme.block, row.size(), weights_group);
    q.words = scheme.words;
    q.unsigned_codes = is_unsigned(scheme.scale);
    const int max = max_code(scheme.scale);
    q.significand_bits = bit_length(static_cast<unsigned>(max));
    const std::size_t blocks = q.blocks();
    q.codes.assign(q.words * q.length, 0);
    q.exponents.assign(q.words * blocks, 0);
    q.states.assign(blocks, BlockState::Finite);
    std::vector<double> x(q.block), r(q.block);
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t first = b * q.block, n = std::min(q.block, q.length - first);
        bool finite = true;
        for (std::size_t j = 0; j < n; ++j) {
            x[j] = row[first + j];
            finite = finite && std::isfinite(row[first + j]);
        }
        if (!finite) {
            q.states[b] = BlockState::NonFinite; // codes and exponents stay 0
            continue;
        }
        const int e1 = quantize_block(x.data(), n, max, q.unsigned_codes, &q.codes[first],
                                      q.words == 2 ? r.data() : nullptr);
        q.exponents[b] = static_cast<std::int16_t>(e1);
        if (q.words == 2) {
            const int e2 = quantize_block(r.data(), n, max, false, &q.codes[q.length + first], nullptr);
            q.exponents[blocks + b] = static_cast<std::int16_t>(e2);
        }
    }
    return q;
}

std::vector<float> dequantize(const QuantizedActivation& q) {
    std::vector<float> out(q.length);
    for (std::size_t j = 0; j < q.length; ++j) {
        const std::size_t b = j / q.block;
        if (q.nonfinite(b)) {
            out[j] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        // The words' sum as an integer over the lower exponent, rounded once.
        const int e1 = q.exponent(0, b);
        __int128 c = q.code(0, j);
        int e = e1;
        if (q.words == 2) {
            const int e2 = q.exponent(1, b);
            const std::int32_t c2 = q.code(1, j);
            if (c2 != 0 && c == 0) {
                c = c2, e = e2;
            } else if (c2 != 0) {
                const int lo = std::min(e1, e2);
                c = (c << (e1 - lo)) + (static_cast<__int128>(c2) << (e2 - lo));
                e = lo;
            }
        }
        out[j] = round_to_f32(c < 0, static_cast<unsigned __int128>(c < 0 ? -c : c), e);
    }
    return out;
}

} // namespace cardsim::numerics
