// Keep formats and the Hadamard rotation: against the spec, the Sylvester matrix, involution on
// exact inputs, outlier spreading, and NaN rows.

#include "engine/error.hpp"
#include "engine/numerics/hadamard.hpp"
#include "engine/numerics/keep.hpp"
#include "engine/numerics/spec/keep.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

TEST_CASE("the Hadamard rotation agrees with the spec's one-rounding-per-operation butterflies") {
    std::mt19937_64 rng(41);
    for (std::size_t n : {1u, 2u, 4u, 8u, 32u, 64u, 128u, 256u})
        for (RowKind kind : all_row_kinds) {
            auto x = make_row(kind, n, rng);
            auto want = spec::hadamard(x);
            hadamard(x);
            for (std::size_t i = 0; i < n; ++i)
                REQUIRE(same_bits(x[i], want[i]));
        }
}

TEST_CASE("on small integers the rotation is exactly the Sylvester matrix over sqrt(n) and its own inverse") {
    std::mt19937_64 rng(42);
    for (std::size_t n : {4u, 16u, 64u, 256u}) { // powers of four: the scale 2^-k/2 is exact
        std::vector<float> x(n);
        for (auto& v : x)
            v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000);
        std::vector<float> y = x;
        hadamard(y);
        const float scale = 1.0f / std::sqrt(static_cast<float>(n));
        for (std::size_t i = 0; i < n; ++i) {
            long long s = 0;
            for (std::size_t j = 0; j < n; ++j)
                s += (std::popcount(i & j) % 2 ? -1 : 1) * static_cast<long long>(x[j]);
            REQUIRE(y[i] == static_cast<float>(s) * scale);
        }
        hadamard(y);
        for (std::size_t i = 0; i < n; ++i)
            REQUIRE(y[i] == x[i]);
    }
}

TEST_CASE("a NaN, an infinity or an overflow anywhere in the row makes the whole rotated row NaN") {
    std::vector<float> x(8, 1.0f);
    x[3] = INFINITY;
    hadamard(x);
    for (float v : x)
        REQUIRE(std::isnan(v));
    std::vector<float> big(8, 3e38f);
    hadamard(big);
    for (float v : big)
        REQUIRE(std::isnan(v));
    REQUIRE_THROWS_AS(hadamard(std::span<float>(x.data(), 6)), cardsim::Error);
}

TEST_CASE("every keep format writes the spec's bytes and reads back what it wrote") {
    std::mt19937_64 rng(43);
    for (Keep k : {Keep::F32, Keep::F16, Keep::Int8Rows, Keep::Int8RowsRotated})
        for (RowKind kind : all_row_kinds)
            for (std::size_t n : {32u, 128u}) {
                auto x = make_row(kind, n, rng);
                auto bytes = keep_row(x, k);
                REQUIRE(bytes.size() == kept_bytes(k, n));
                REQUIRE(bytes == spec::keep_row(x, k));
                std::vector<float> back(n);
                read_row(bytes, k, back);
                if (k == Keep::F32)
                    for (std::size_t j = 0; j < n; ++j)
                        REQUIRE(same_bits(back[j], x[j]));
                if (k == Keep::F16)
                    for (std::size_t j = 0; j < n; ++j)
                        REQUIRE(same_bits(back[j], to_f32(to_f16(x[j]))));
                if (k == Keep::Int8Rows) {
                    Int8Row row = int8_row(bytes, n);
                    for (std::size_t j = 0; j < n; ++j)
                        REQUIRE(back[j] == static_cast<float>(row.codes[j]) * to_f32(row.scale));
                }
            }
}

TEST_CASE("int8 rows err by at most half a step of their f16 scale plus its rounding") {
    std::mt19937_64 rng(44);
    for (RowKind kind : {RowKind::Normal, RowKind::Outliers, RowKind::Wide}) {
        auto x = make_row(kind, 128, rng);
        auto bytes = keep_row(x, Keep::Int8Rows);
        std::vector<float> back(128);
        read_row(bytes, Keep::Int8Rows, back);
        const double d = to_f32(int8_row(bytes, 128).scale);
        double amax = 0;
        for (float v : x)
            amax = std::max(amax, static_cast<double>(std::abs(v)));
        for (std::size_t j = 0; j < 128; ++j)
            REQUIRE(std::abs(static_cast<double>(x[j]) - back[j]) <=
                    std::max(d / 2, amax - 127 * d) * (1 + 1e-12));
    }
}

TEST_CASE("rotating before int8 spreads an outlier and shrinks the error of the other values") {
    std::mt19937_64 rng(45);
    std::normal_distribution<float> g(0.0f, 1.0f);
    double plain = 0, rotated = 0;
    for (int rep = 0; rep < 20; ++rep) {
        std::vector<float> x(256);
        for (auto& v : x)
            v = g(rng);
        x[rng() % 256] = 400.0f;
        std::vector<float> a(256), b(256);
        read_row(keep_row(x, Keep::Int8Rows), Keep::Int8Rows, a);
        read_row(keep_row(x, Keep::Int8RowsRotated), Keep::Int8RowsRotated, b);
        hadamard(b); // back to the original basis
        for (std::size_t j = 0; j < 256; ++j) {
            plain += std::abs(a[j] - x[j]);
            rotated += std::abs(b[j] - x[j]);
        }
    }
    REQUIRE(rotated < plain / 4);
}

TEST_CASE("a kept row of the wrong size is refused with a sentence") {
    std::vector<float> x(8, 1.0f);
    std::vector<std::byte> small(3);
    REQUIRE_THROWS_AS(keep_row(x, Keep::F16, small), cardsim::Error);
    std::vector<float> out(8);
    REQUIRE_THROWS_AS(read_row(small, Keep::Int8Rows, out), cardsim::Error);
    std::vector<float> six(6, 1.0f);
    REQUIRE_THROWS_AS(keep_row(six, Keep::Int8RowsRotated), cardsim::Error);
}
