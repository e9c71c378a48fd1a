#include "engine/numerics/spec/activation.hpp"

#include <cmath>

namespace cardsim::numerics::spec {
namespace {

/// The block rule on exact values: returns e and writes the codes.
int quantize_block(const std::vector<Rational>& x, Integer max, bool is_unsigned,
                   std::vector<Integer>& codes) {
    Rational amax = 0;
    for (auto& v : x)
        amax = std::max(amax, v < 0 ? Rational(-v) : v);
    codes.assign(x.size(), 0);
    if (amax == 0) return 0; // a zero block: exponent 0, codes 0
    // Below floor(log2 amax) - bits(max) - 1 the largest code surely exceeds max; step up to the
    // first exponent at which it fits.
    int e = floor_log2(amax) - static_cast<int>(msb(max)) - 3;
    while (round_half_even(amax / power_of_two(e)) > max)
        ++e;
    Integer lo = is_unsigned ? Integer(0) : Integer(-max);
    for (std::size_t j = 0; j < x.size(); ++j) {
        Integer c = round_half_even(x[j] / power_of_two(e));
        codes[j] = c < lo ? lo : c > max ? max : c;
    }
    return e;
}

} // namespace

QuantizedActivation quantize(std::span<const float> row, const Scheme& scheme, std::size_t weights_group) {
    QuantizedActivation q;
    q.length = row.size();
    if (auto* v = std::get_if<Values>(&scheme.block))
        q.block = v->n;
    else if (std::holds_alternative<OfTheWeights>(scheme.block))
        q.block = weights_group;
    else
        q.block = row.empty() ? 1 : row.size();
    q.words = scheme.words;
    q.unsigned_codes = std::holds_alternative<LeastPowerOfTwoOver255>(scheme.scale);
    Integer max = q.unsigned_codes
                      ? Integer(255)
                      : (Integer(1) << std::get<LeastPowerOfTwo>(scheme.scale).significand_bits) - 1;
    q.significand_bits = static_cast<int>(msb(max)) + 1;
    const std::size_t blocks = (q.length + q.block - 1) / q.block;
    q.codes.assign(q.words * q.length, 0);
    q.exponents.assign(q.words * blocks, 0);
    q.states.assign(blocks, BlockState::Finite);
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t first = b * q.block;
        const std::size_t n = std::min(q.block, q.length - first);
        std::vector<Rational> x;
        bool finite = true;
        for (std::size_t j = 0; j < n; ++j) {
            if (!std::isfinite(row[first + j]))
                finite = false;
            else
                x.push_back(value(row[first + j]));
        }
        if (!finite) {
            q.states[b] = BlockState::NonFinite;
            continue;
        }
        std::vector<Integer> c1, c2;
        const int e1 = quantize_block(x, max, q.unsigned_codes, c1);
        q.exponents[b] = static_cast<std::int16_t>(e1);
        for (std::size_t j = 0; j < n; ++j)
            q.codes[first + j] = static_cast<std::int32_t>(c1[j]);
        if (q.words == 2) {
            std::vector<Rational> residual;
            for (std::size_t j = 0; j < n; ++j)
                residual.push_back(x[j] - Rational(c1[j]) * power_of_two(e1));
            const int e2 = quantize_block(residual, max, false, c2);
            q.exponents[blocks + b] = static_cast<std::int16_t>(e2);
            for (std::size_t j = 0; j < n; ++j)
                q.codes[q.length + first + j] = static_cast<std::int32_t>(c2[j]);
        }
    }
    return q;
}

Rational value(const QuantizedActivation& q, std::size_t j) {
    const std::size_t b = j / q.block, blocks = (q.length + q.block - 1) / q.block;
    Rational v = Rational(q.codes[j]) * power_of_two(q.exponents[b]);
    if (q.words == 2) v += Rational(q.codes[q.length + j]) * power_of_two(q.exponents[blocks + b]);
    return v;
}

} // namespace cardsim::numerics::spec
