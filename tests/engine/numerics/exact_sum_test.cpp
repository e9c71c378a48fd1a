// The accumulator window: the fast window sum against the spec on random and adversarial terms,
// order invariance, and what happens to terms below the window.

#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/spec/window.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

std::vector<Term> random_terms(std::mt19937_64& rng, std::size_t n, int exponent_spread) {
    std::vector<Term> t(n);
    std::uniform_int_distribution<int> bits(0, 62), e(-300, -300 + exponent_spread);
    for (auto& x : t) {
        const int b = bits(rng);
        const std::uint64_t r = rng();
        x.significand = static_cast<std::int64_t>(b == 0 ? 0 : r >> (64 - b)) * (rng() % 2 ? 1 : -1);
        x.exponent = e(rng) + 300 - 150;
    }
    return t;
}

std::vector<spec::Rational> exact(const std::vector<Term>& t) {
    std::vector<spec::Rational> out;
    for (auto& x : t)
        out.push_back(spec::Rational(x.significand) * spec::power_of_two(x.exponent));
    return out;
}

} // namespace

TEST_CASE("the window sum agrees with the spec window on random terms of any spread") {
    std::mt19937_64 rng(21);
    for (int spread : {0, 10, 40, 80, 200})
        for (std::size_t n : {1u, 2u, 7u, 64u}) {
            for (int rep = 0; rep < 50; ++rep) {
                auto t = random_terms(rng, n, spread);
                REQUIRE(same_bits(window_sum(t), spec::window_sum(exact(t))));
            }
        }
}

TEST_CASE("the window sum never depends on the order of its terms") {
    std::mt19937_64 rng(22);
    for (int rep = 0; rep < 200; ++rep) {
        auto t = random_terms(rng, 48, rep % 120);
        const float first = window_sum(t);
        for (int s = 0; s < 5; ++s) {
            std::shuffle(t.begin(), t.end(), rng);
            REQUIRE(same_bits(window_sum(t), first));
        }
    }
}

TEST_CASE("inside the window the sum is the correctly rounded exact sum, cancellation included") {
    // 2^40 + 1 - 2^40 + 2^-20: all inside 64 places below 2^41.
    std::vector<Term> t{{1, 40}, {1, 0}, {-1, 40}, {1, -20}};
    REQUIRE(window_sum(t) == 1.0f + 0x1p-20f);
    // An exact tie between two floats goes to even: 1 + 2^-24 -> 1; 1 + 3 x 2^-24 -> 1 + 2^-22.
    REQUIRE(window_sum(std::vector<Term>{{1, 0}, {1, -24}}) == 1.0f);
    REQUIRE(window_sum(std::vector<Term>{{1, 0}, {3, -24}}) == 1.0f + 0x1p-22f);
    // A tie broken by a term 63 places down is not a tie.
    REQUIRE(window_sum(std::vector<Term>{{1, 0}, {1, -24}, {1, -63}}) == 1.0f + 0x1p-23f);
    // Overflow rounds to infinity, underflow keeps subnormals.
    REQUIRE(std::isinf(window_sum(std::vector<Term>{{1, 127}, {1, 127}})));
    REQUIRE(window_sum(std::vector<Term>{{3, -150}}) == 0x1p-148f); // 1.5 x 2^-149 -> tie -> 2 x 2^-149
}

TEST_CASE("terms below the window are truncated toward zero and a sum that cancels to them is zero") {
    // 2^70 - 2^70 + 1: H = 71, L = 7, so the 1 is dropped: the sum is +0, not 1.
    REQUIRE(same_bits(window_sum(std::vector<Term>{{1, 70}, {-1, 70}, {1, 0}}), 0.0f));
    REQUIRE(same_bits(window_sum(std::vector<Term>{{1, 70}, {-1, 70}, {-1, 0}}), 0.0f)); // toward zero
    // A term straddling L keeps its bits from L up: 2^70 + (2^10 + 2^3 + 1) - 2^70 = 2^10 + 2^7... with
    // L = 7 the 2^3 and 1 go and 2^10 stays.
    REQUIRE(window_sum(std::vector<Term>{{1, 70}, {(1 << 10) + 9, 0}, {-1, 70}}) == 1024.0f);
    // Just inside: the window reaches down to 2^7 exactly.
    REQUIRE(window_sum(std::vector<Term>{{1, 70}, {1, 7}, {-1, 70}}) == 128.0f);
    REQUIRE(window_sum(std::vector<Term>{}) == 0.0f);
}

TEST_CASE("products of floats are exact terms") {
    std::mt19937_64 rng(23);
    for (RowKind kind : all_row_kinds) {
        auto a = make_row(kind, 64, rng), b = make_row(RowKind::Wide, 64, rng);
        for (std::size_t i = 0; i < 64; ++i) {
            Term t = product(a[i], b[i]);
            REQUIRE(spec::Rational(t.significand) * spec::power_of_two(t.exponent) ==
                    spec::value(a[i]) * spec::value(b[i]));
        }
    }
}

TEST_CASE("column window sums in row-major sweeps give the bits of each column's own window sum") {
    std::mt19937_64 rng(71);
    for (RowKind kind : {RowKind::Normal, RowKind::Outliers, RowKind::Wide, RowKind::Zeros,
                         RowKind::Subnormal, RowKind::Extremes, RowKind::Unit}) {
        const std::size_t rows = 37, cols = 29;
        std::vector<float> m, x = make_row(kind, rows, rng);
        for (std::size_t i = 0; i < rows; ++i) {
            auto r = make_row(kind, cols, rng);
            m.insert(m.end(), r.begin(), r.end());
        }
        x[3] = 0.0f; // a zero weight drops a whole row of products
        std::vector<float> got(cols);
        window_sums_of_columns(m, rows, cols, x, got);
        std::vector<Term> terms(rows);
        for (std::size_t j = 0; j < cols; ++j) {
            for (std::size_t i = 0; i < rows; ++i)
                terms[i] = product(m[i * cols + j], x[i]);
            INFO("column " << j);
            REQUIRE(same_bits(got[j], window_sum(terms)));
        }
    }
}
