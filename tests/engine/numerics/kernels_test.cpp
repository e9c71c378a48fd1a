// The per-unit kernels: each fast kernel against its spec bit for bit on random and adversarial
// inputs, and against the plain double formula it stands for.

#include "engine/error.hpp"
#include "engine/numerics/conv.hpp"
#include "engine/numerics/elementwise.hpp"
#include "engine/numerics/gated_deltanet.hpp"
#include "engine/numerics/norms.hpp"
#include "engine/numerics/rotary.hpp"
#include "engine/numerics/spec/kernels.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

void require_same(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("element " << i << ": " << a[i] << " vs " << b[i]);
        REQUIRE(same_bits(a[i], b[i]));
    }
}

const RowKind kinds[] = {RowKind::Unit,  RowKind::Normal,    RowKind::Outliers, RowKind::Wide,
                         RowKind::Zeros, RowKind::Subnormal, RowKind::Extremes};

} // namespace

TEST_CASE("RMSNorm, LayerNorm and L2 norm agree with their spec on every kind of row") {
    std::mt19937_64 rng(61);
    for (RowKind kind : kinds) {
        auto x = make_row(kind, 128, rng);
        auto w = make_row(RowKind::Unit, 32, rng), wn = make_row(RowKind::Unit, 128, rng),
             b = make_row(RowKind::Unit, 128, rng);
        std::vector<float> y(128);
        for (NormWeight k : {NormWeight::Plain, NormWeight::ZeroCentred}) {
            rms_norm(x, w, 1e-6f, k, y);
            require_same(y, spec::rms_norm(x, w, 1e-6f, k));
        }
        layer_norm(x, wn, b, 1e-5f, y);
        require_same(y, spec::layer_norm(x, wn, b, 1e-5f));
        layer_norm(x, wn, {}, 1e-5f, y);
        require_same(y, spec::layer_norm(x, wn, {}, 1e-5f));
        for (float scale : {1.0f, 0.125f, 0.0883883476f}) {
            l2_norm(x, 64, 1e-6f, scale, y);
            require_same(y, spec::l2_norm(x, 64, 1e-6f, scale));
        }
    }
}

TEST_CASE("the norms compute the formulas they stand for") {
    std::mt19937_64 rng(62);
    auto x = make_row(RowKind::Unit, 64, rng), w = make_row(RowKind::Unit, 64, rng);
    std::vector<float> y(64);
    rms_norm(x, w, 1e-6f, NormWeight::ZeroCentred, y);
    double ss = 0, sum = 0;
    for (float v : x)
        ss += static_cast<double>(v) * v, sum += v;
    for (std::size_t j = 0; j < 64; ++j)
        REQUIRE(std::abs(y[j] - x[j] / std::sqrt(ss / 64 + 1e-6) * (1 + w[j])) <=
                1e-5 * (1 + std::abs(y[j])));
    l2_norm(x, 64, 1e-6f, 1.0f, y);
    for (std::size_t j = 0; j < 64; ++j)
        REQUIRE(std::abs(y[j] - x[j] / std::sqrt(ss + 1e-6)) <= 1e-6);
    l2_norm(x, 64, 1e-6f, 0.125f, y);
    for (std::size_t j = 0; j < 64; ++j)
        REQUIRE(std::abs(y[j] - 0.125 * x[j] / std::sqrt(ss + 1e-6)) <= 1e-7);
    layer_norm(x, w, {}, 1e-5f, y);
    const double mean = sum / 64;
    double var = 0;
    for (float v : x)
        var += (v - mean) * (v - mean);
    for (std::size_t j = 0; j < 64; ++j)
        REQUIRE(std::abs(y[j] - (x[j] - mean) / std::sqrt(var / 64 + 1e-5) * w[j]) <=
                1e-5 * (1 + std::abs(y[j])));
}

TEST_CASE("SiLU-mul, GELU-mul and the sigmoid gate agree with their spec") {
    std::mt19937_64 rng(63);
    for (RowKind kind : kinds) {
        auto a = make_row(kind, 64, rng), b = make_row(RowKind::Normal, 64, rng);
        std::vector<float> y(64);
        silu_mul(a, b, y);
        require_same(y, spec::silu_mul(a, b));
        gelu_mul(a, b, y);
        require_same(y, spec::gelu_mul(a, b));
        sigmoid_gate(b, a, y);
        require_same(y, spec::sigmoid_gate(b, a));
    }
}

TEST_CASE("arg-max takes the lowest index of the largest value and the first NaN") {
    REQUIRE(argmax(std::vector<float>{1, 3, 2, 3}) == 1);
    REQUIRE(argmax(std::vector<float>{-0.0f, 0.0f}) == 0);
    REQUIRE(argmax(std::vector<float>{-INFINITY, -1e30f}) == 1);
    REQUIRE(argmax(std::vector<float>{1, NAN, 5, NAN}) == 1);
    REQUIRE_THROWS_AS(argmax(std::vector<float>{}), cardsim::Error);
}

TEST_CASE("the causal conv, with and without SiLU, agrees with its spec token after token and keeps its "
          "window") {
    std::mt19937_64 rng(64);
    const std::size_t C = 48, K = 4;
    auto w = make_row(RowKind::Unit, C * K, rng), bias = make_row(RowKind::Unit, C, rng);
    for (bool with_bias : {false, true})
        for (bool with_silu : {true, false}) {
            ConvState state(C, K);
            std::vector<float> window((K - 1) * C, 0.0f);
            std::vector<std::vector<float>> xs;
            for (int t = 0; t < 7; ++t) {
                xs.push_back(make_row(t == 3 ? RowKind::Wide : RowKind::Unit, C, rng));
                std::vector<float> out(C);
                std::span<const float> b =
                    with_bias ? std::span<const float>(bias) : std::span<const float>();
                if (with_silu) {
                    conv_silu_step(xs.back(), w, b, state, out);
                    require_same(out, spec::conv_silu_step(xs.back(), w, b, window, K));
                } else {
                    conv_step(xs.back(), w, b, state, out);
                    require_same(out, spec::conv_step(xs.back(), w, b, window, K));
                }
                require_same(state.window, window);
                // the formula: silu(sum_j w[c][j] x_{t-K+1+j}[c] + bias)
                for (std::size_t c = 0; c < C && t != 3 && t < 3; ++c) {
                    double s = with_bias ? bias[c] : 0.0;
                    for (std::size_t j = 0; j < K; ++j) {
                        const int tt = t - static_cast<int>(K) + 1 + static_cast<int>(j);
                        if (tt >= 0)
                            s += static_cast<double>(w[c * K + j]) * xs[static_cast<std::size_t>(tt)][c];
                    }
                    const double want = with_silu ? s / (1 + std::exp(-s)) : s;
                    REQUIRE(std::abs(out[c] - want) <= 1e-5 * (1 + std::abs(s)));
                }
            }
        }
}

TEST_CASE("the Gated-DeltaNet gates, state step and gated norm agree with their spec") {
    std::mt19937_64 rng(65);
    const std::size_t dk = 32, dv = 16;
    auto a = make_row(RowKind::Unit, 8, rng), b = make_row(RowKind::Unit, 8, rng);
    auto a_log = make_row(RowKind::Unit, 8, rng), dt = make_row(RowKind::Unit, 8, rng);
    std::vector<float> beta(8), g(8), sbeta, sg;
    gdn_gates(a, b, a_log, dt, beta, g);
    spec::gdn_gates(a, b, a_log, dt, sbeta, sg);
    require_same(beta, sbeta);
    require_same(g, sg);
    for (Keep keep : {Keep::F32, Keep::F16}) {
        std::vector<float> S(dk * dv, 0.0f), T = S, o(dv);
        for (int step = 0; step < 5; ++step) {
            auto q = make_row(RowKind::Unit, dk, rng), k = make_row(RowKind::Unit, dk, rng),
                 v = make_row(RowKind::Unit, dv, rng);
            delta_rule_step(S, q, k, v, g[step], beta[step], keep, o);
            require_same(o, spec::delta_rule_step(T, q, k, v, g[step], beta[step], keep));
            require_same(S, T);
        }
    }
    auto x = make_row(RowKind::Unit, 64, rng), z = make_row(RowKind::Normal, 64, rng),
         w = make_row(RowKind::Unit, 16, rng);
    std::vector<float> y(64);
    gated_rms_norm(x, z, w, 1e-6f, y);
    require_same(y, spec::gated_rms_norm(x, z, w, 1e-6f));
}

TEST_CASE("the delta-rule step computes the recurrence it stands for") {
    std::mt19937_64 rng(66);
    const std::size_t dk = 16, dv = 8;
    std::vector<float> S(dk * dv), o(dv);
    for (auto& s : S)
        s = make_row(RowKind::Unit, 1, rng)[0];
    std::vector<double> D(S.begin(), S.end());
    auto q = make_row(RowKind::Unit, dk, rng), k = make_row(RowKind::Unit, dk, rng),
         v = make_row(RowKind::Unit, dv, rng);
    const float g = -0.3f, beta = 0.7f;
    delta_rule_step(S, q, k, v, g, beta, Keep::F32, o);
    for (auto& s : D)
        s *= std::exp(static_cast<double>(g));
    for (std::size_t j = 0; j < dv; ++j) {
        double kv = 0;
        for (std::size_t i = 0; i < dk; ++i)
            kv += D[i * dv + j] * k[i];
        const double delta = beta * (v[j] - kv);
        for (std::size_t i = 0; i < dk; ++i)
            D[i * dv + j] += k[i] * delta;
    }
    for (std::size_t j = 0; j < dv; ++j) {
        double oj = 0;
        for (std::size_t i = 0; i < dk; ++i)
            oj += D[i * dv + j] * q[i];
        REQUIRE(std::abs(o[j] - oj) <= 1e-4);
    }
}

TEST_CASE("a non-finite input makes the delta-rule step's output and state NaN") {
    std::vector<float> S(4, 1.0f), o(2), q{1, 0}, k{0, 1}, v{1, NAN};
    delta_rule_step(S, q, k, v, -0.1f, 0.5f, Keep::F32, o);
    for (float s : S)
        REQUIRE(std::isnan(s));
    for (float x : o)
        REQUIRE(std::isnan(x));
}

TEST_CASE("the NeoX rotation agrees with its spec, leaves the unrotated tail alone and keeps norms") {
    std::mt19937_64 rng(67);
    for (std::uint32_t pos : {0u, 1u, 17u, 4095u, 1000000u})
        for (std::size_t rot : {64u, 16u}) {
            auto x = make_row(RowKind::Unit, 2 * 64, rng);
            auto want = spec::rotate(x, 64, rot, 1e7, pos);
            auto y = x;
            rotate(y, 64, rot, 1e7, pos);
            require_same(y, want);
            for (std::size_t h = 0; h < 2; ++h)
                for (std::size_t j = rot; j < 64; ++j)
                    REQUIRE(same_bits(y[h * 64 + j], x[h * 64 + j]));
            for (std::size_t i = 0; i < rot / 2; ++i) {
                const double before = std::hypot(x[i], x[i + rot / 2]),
                             after = std::hypot(y[i], y[i + rot / 2]);
                REQUIRE(std::abs(before - after) <= 1e-6 * (1 + before));
            }
        }
    std::vector<float> x(64, 1.0f), y = x;
    rotate(y, 64, 64, 10000.0, 0);
    require_same(y, x); // position 0 is the identity
    REQUIRE_THROWS_AS(rotate(y, 64, 65, 10000.0, 0), cardsim::Error);
    REQUIRE_THROWS_AS(rotate(y, 64, 64, 10000.0, 1u << 24), cardsim::Error);
}
