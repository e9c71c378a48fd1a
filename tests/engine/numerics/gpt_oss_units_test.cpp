// gpt-oss's unit arithmetic: the clamped SwiGLU and the YaRN rotation, each against long double
// within the error bound its contract states, and YaRN's frequency table against the structure of
// transformers' `_compute_yarn_parameters`.

#include "engine/numerics/elementwise.hpp"
#include "engine/numerics/rotary.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;

TEST_CASE("the clamped SwiGLU lies within (5 + |alpha g|) 2^-24 of its exact value, clamps both inputs, "
          "and keeps a NaN") {
    std::mt19937_64 rng(71);
    const float limit = 7.0f, alpha = 1.702f;
    for (RowKind kind : {RowKind::Unit, RowKind::Normal, RowKind::Outliers}) {
        auto g = make_row(kind, 4096, rng), u = make_row(kind, 4096, rng);
        for (std::size_t j = 0; j < g.size(); ++j) { // spread over the clamp's range and past it
            g[j] *= 5;
            u[j] *= 5;
        }
        std::vector<float> y(g.size());
        swiglu_clamp(g, u, limit, alpha, y);
        for (std::size_t j = 0; j < y.size(); ++j) {
            const long double gate = std::min<long double>(g[j], limit);
            const long double up = std::clamp<long double>(u[j], -limit, limit);
            const long double t = static_cast<long double>(alpha) * gate;
            const long double exact = (up + 1) * gate / (1 + std::exp(-t));
            INFO("g " << g[j] << " u " << u[j]);
            REQUIRE(std::fabs(y[j] - exact) <= (5 + std::fabs(t)) * 0x1p-24L * std::fabs(exact) + 1e-40L);
        }
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> g{100.0f, -3.0f, nan, 1.0f}, u{100.0f, -100.0f, 1.0f, nan}, y(4);
    swiglu_clamp(g, u, limit, alpha, y);
    // gate 100 and up 100 are clamped to 7: (7 + 1) · 7 · σ(1.702 · 7).
    CHECK(y[0] == Approx(8.0 * 7.0 / (1 + std::exp(-double(alpha) * 7.0))).epsilon(1e-6));
    CHECK(y[1] ==
          Approx(-6.0 * -3.0 / (1 + std::exp(double(alpha) * 3.0))).epsilon(1e-6)); // up clamped to −7
    CHECK(std::isnan(y[2]));
    CHECK(std::isnan(y[3]));
}

TEST_CASE("YaRN's frequencies are theta's below the fast correction pair, theta's over the factor above "
          "the slow one, and fall monotonically between") {
    // gpt-oss-20b: head_dim 64, theta 150000, factor 32 over 4096 positions, betas 32 and 1, not
    // truncated: the ramp runs from pair 8.09 to pair 17.4.
    const Yarn y{32, 32, 1, 4096, false};
    const auto f = yarn_frequencies(64, 150000.0, y);
    const auto exact = yarn_frequencies_f64(64, 150000.0, y);
    REQUIRE(f.size() == 32);
    for (std::size_t i = 0; i < f.size(); ++i) {
        const double plain = std::pow(150000.0, -2.0 * double(i) / 64);
        CHECK(f[i] == static_cast<float>(exact[i])); // rounded once
        if (i <= 8) CHECK(exact[i] == Approx(plain).epsilon(1e-15));
        if (i >= 18) CHECK(exact[i] == Approx(plain / 32).epsilon(1e-15));
        if (i > 0) CHECK(exact[i] < exact[i - 1]);
    }
    // Truncated, the ramp's ends are whole pairs: 8 and 18.
    const auto t = yarn_frequencies_f64(64, 150000.0, Yarn{32, 32, 1, 4096, true});
    CHECK(t[8] == Approx(std::pow(150000.0, -16.0 / 64)).epsilon(1e-15));
    CHECK(t[18] == Approx(std::pow(150000.0, -36.0 / 64) / 32).epsilon(1e-15));
    CHECK_THROWS(yarn_frequencies(64, 150000.0, Yarn{0.5, 32, 1, 4096, false}));
}

TEST_CASE("the YaRN rotation lies within 4 2^-24 of the exact rotation by its table, times its scale") {
    std::mt19937_64 rng(72);
    const std::size_t head = 64, rd = 64;
    const auto f = yarn_frequencies(rd, 150000.0, Yarn{32, 32, 1, 4096, false});
    const float scale = static_cast<float>(0.1 * std::log(32.0) + 1.0);
    for (std::uint32_t pos : {0u, 1u, 17u, 4095u, 100000u}) {
        auto x = make_row(RowKind::Unit, 2 * head, rng);
        auto y = x;
        rotate_scaled(y, head, rd, f, scale, pos);
        for (std::size_t h = 0; h < 2 * head; h += head)
            for (std::size_t i = 0; i < rd / 2; ++i) {
                // The angle as the contract forms it (one f32 product), then exact trigonometry.
                const long double a = static_cast<float>(pos) * f[i];
                const long double c = std::cos(a) * scale, s = std::sin(a) * scale;
                const long double x1 = x[h + i], x2 = x[h + i + rd / 2];
                const long double bound = 4 * 0x1p-24L * scale * (std::fabs(x1) + std::fabs(x2)) + 1e-40L;
                INFO("pos " << pos << " pair " << i);
                REQUIRE(std::fabs(y[h + i] - (x1 * c - x2 * s)) <= bound);
                REQUIRE(std::fabs(y[h + i + rd / 2] - (x2 * c + x1 * s)) <= bound);
            }
    }
}
