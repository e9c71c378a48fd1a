// Activation quantisation: the fast quantiser against the exact spec, the scale rule, the error
// bounds, and what zero, subnormal, NaN and infinite blocks give.

#include "engine/error.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/numerics/spec/activation.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

std::vector<Scheme> schemes() {
    std::vector<Scheme> out;
    for (int bits : {1, 2, 4, 7, 8, 15, 23, 24})
        for (int words : {1, 2})
            for (Block b : {Block{Values{32}}, Block{Values{7}}, Block{Row{}}, Block{OfTheWeights{}}})
                out.push_back(Scheme{b, LeastPowerOfTwo{bits}, words});
    out.push_back(Scheme{Values{32}, LeastPowerOfTwoOver255{}, 1});
    out.push_back(Scheme{Row{}, LeastPowerOfTwoOver255{}, 1});
    return out;
}

void require_same(const QuantizedActivation& a, const QuantizedActivation& b) {
    REQUIRE(a.length == b.length);
    REQUIRE(a.block == b.block);
    REQUIRE(a.words == b.words);
    REQUIRE(a.significand_bits == b.significand_bits);
    REQUIRE(a.unsigned_codes == b.unsigned_codes);
    REQUIRE(a.codes == b.codes);
    REQUIRE(a.exponents == b.exponents);
    REQUIRE(a.states == b.states);
}

} // namespace

TEST_CASE("activation quantisation agrees with the exact spec on random and adversarial rows") {
    std::mt19937_64 rng(1);
    for (const Scheme& s : schemes())
        for (RowKind kind : all_row_kinds)
            for (std::size_t n : {1u, 31u, 96u}) {
                std::vector<float> row = make_row(kind, n, rng);
                if (is_unsigned(s.scale))
                    for (float& x : row)
                        x = std::abs(x);
                INFO(to_string(s) << " kind " << static_cast<int>(kind) << " n " << n);
                require_same(quantize(row, s, 64), spec::quantize(row, s, 64));
            }
}

TEST_CASE("codes stay in range and each block's exponent is the least at which its codes fit") {
    std::mt19937_64 rng(2);
    for (const Scheme& s : schemes())
        for (RowKind kind : all_row_kinds) {
            std::vector<float> row = make_row(kind, 64, rng);
            QuantizedActivation q = quantize(row, s, 32);
            const spec::Integer max = max_code(s.scale);
            for (int w = 0; w < q.words; ++w)
                for (std::size_t b = 0; b < q.blocks(); ++b) {
                    spec::Rational amax = 0;
                    for (std::size_t j = b * q.block; j < std::min(q.length, (b + 1) * q.block); ++j) {
                        REQUIRE(std::abs(q.code(w, j)) <= max_code(s.scale));
                        if (q.unsigned_codes) REQUIRE(q.code(w, j) >= 0);
                        spec::Rational x = spec::value(row[j]);
                        if (w == 1) x -= spec::Rational(q.code(0, j)) * spec::power_of_two(q.exponent(0, b));
                        amax = std::max(amax, x < 0 ? spec::Rational(-x) : x);
                    }
                    if (amax == 0) {
                        REQUIRE(q.exponent(w, b) == ZERO_BLOCK_EXPONENT);
                        continue;
                    }
                    const int e = q.exponent(w, b);
                    REQUIRE(spec::round_half_even(amax / spec::power_of_two(e)) <= max);
                    REQUIRE(spec::round_half_even(amax / spec::power_of_two(e - 1)) > max);
                }
        }
}

TEST_CASE("quantise then dequantise stays within amax / (M + 1/2) per word") {
    std::mt19937_64 rng(3);
    for (const Scheme& s : schemes()) {
        if (is_unsigned(s.scale)) continue;
        for (RowKind kind : all_row_kinds) {
            std::vector<float> row = make_row(kind, 64, rng);
            QuantizedActivation q = quantize(row, s, 32);
            const spec::Rational bound_per_word =
                spec::Rational(1) / (spec::Rational(max_code(s.scale)) + spec::Rational(1, 2));
            for (std::size_t b = 0; b < q.blocks(); ++b) {
                spec::Rational amax = 0;
                for (std::size_t j = b * q.block; j < std::min(q.length, (b + 1) * q.block); ++j)
                    amax = std::max(amax, spec::Rational(abs(spec::value(row[j]))));
                spec::Rational bound = amax * bound_per_word;
                if (q.words == 2) bound *= bound_per_word;
                for (std::size_t j = b * q.block; j < std::min(q.length, (b + 1) * q.block); ++j)
                    REQUIRE(spec::Rational(abs(spec::value(row[j]) - spec::value(q, j))) <= bound);
            }
        }
    }
}

TEST_CASE("a NaN or an infinity flags its block, which dequantises to NaN and never to a finite code") {
    std::vector<float> row(96, 1.5f);
    row[5] = std::numeric_limits<float>::quiet_NaN();
    row[40] = -std::numeric_limits<float>::infinity();
    for (int words : {1, 2}) {
        QuantizedActivation q = quantize(row, Scheme{Values{32}, LeastPowerOfTwo{4}, words});
        REQUIRE(q.nonfinite(0));
        REQUIRE(q.nonfinite(1));
        REQUIRE_FALSE(q.nonfinite(2));
        std::vector<float> back = dequantize(q);
        for (std::size_t j = 0; j < 64; ++j)
            REQUIRE(std::isnan(back[j]));
        for (std::size_t j = 64; j < 96; ++j)
            REQUIRE(back[j] == 1.5f);
    }
}

TEST_CASE("a zero block gets exponent 0 and zero codes while a subnormal block keeps its values") {
    std::vector<float> row(64, -0.0f);
    for (std::size_t j = 32; j < 64; ++j)
        row[j] = std::numeric_limits<float>::denorm_min() * static_cast<float>(j);
    QuantizedActivation q = quantize(row, Scheme{Values{32}, LeastPowerOfTwo{7}, 1});
    REQUIRE(q.exponent(0, 0) == 0);
    for (std::size_t j = 0; j < 32; ++j)
        REQUIRE(q.code(0, j) == 0);
    std::vector<float> back = dequantize(q);
    REQUIRE(back[0] == 0.0f);
    REQUIRE_FALSE(std::signbit(back[0])); // the sign of zero is not kept
    for (std::size_t j = 32; j < 64; ++j)
        REQUIRE(back[j] == row[j]);    // 63 needs 6 bits: exact
    REQUIRE(q.exponent(0, 1) == -150); // 63 x 2^-149 = 126 x 2^-150 still fits 7 bits: below the f32 grid
}

TEST_CASE("the least power of two moves up a binade when the largest value rounds past the largest code") {
    // 15.5 x 2^-3 with 4 bits: at e = -3 it rounds to 16 > 15, so e = -2 and the code is 8 (tie to even).
    std::vector<float> row{15.5f * 0.125f, 1.0f};
    QuantizedActivation q = quantize(row, Scheme{Row{}, LeastPowerOfTwo{4}, 1});
    REQUIRE(q.exponent(0, 0) == -2);
    REQUIRE(q.code(0, 0) == 8);
    REQUIRE(q.code(0, 1) == 4);
    // just below: 15.4999 x 2^-3 fits at e = -3 with code 15.
    row[0] = std::nextafter(15.5f, 0.0f) * 0.125f;
    q = quantize(row, Scheme{Row{}, LeastPowerOfTwo{4}, 1});
    REQUIRE(q.exponent(0, 0) == -3);
    REQUIRE(q.code(0, 0) == 15);
}

TEST_CASE("a malformed scheme is refused with a sentence") {
    std::vector<float> row(4, 1.0f);
    REQUIRE_THROWS_AS(quantize(row, Scheme{Values{0}, LeastPowerOfTwo{4}, 1}), cardsim::Error);
    REQUIRE_THROWS_AS(quantize(row, Scheme{Values{32}, LeastPowerOfTwo{0}, 1}), cardsim::Error);
    REQUIRE_THROWS_AS(quantize(row, Scheme{Values{32}, LeastPowerOfTwo{25}, 1}), cardsim::Error);
    REQUIRE_THROWS_AS(quantize(row, Scheme{Values{32}, LeastPowerOfTwo{4}, 3}), cardsim::Error);
    REQUIRE_THROWS_AS(quantize(row, Scheme{Values{32}, LeastPowerOfTwoOver255{}, 2}), cardsim::Error);
}
