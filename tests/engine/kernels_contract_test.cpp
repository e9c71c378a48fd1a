// The card's unit kernels (engine/kernels, what the simulator and the golden executor run) are the
// numerics contract's kernels (engine/numerics, each held to its spec): equal bits on random rows,
// with the card's layouts (rows of groups, weight-less norms, a scaled L2 norm, rows of gates).

#include "engine/kernels/kernels.hpp"
#include "engine/numerics/elementwise.hpp"
#include "engine/numerics/gated_deltanet.hpp"
#include "engine/numerics/norms.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

using namespace cardsim;

namespace {

std::vector<float> random_row(std::size_t n, std::mt19937_64& rng, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v)
        x = d(rng);
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

} // namespace

TEST_CASE("the card's norms are the contract's, weight-less and zero-centred ones included") {
    std::mt19937_64 rng(91);
    const std::size_t group = 64, n = 4 * group;
    auto x = random_row(n, rng), w = random_row(group, rng, 0.1f);
    const std::vector<float> ones(group, 1.0f);
    std::vector<float> card(n), contract(n);
    kernels::rms_norm(x, w, group, 1e-6, true, card);
    numerics::rms_norm(x, w, 1e-6f, numerics::NormWeight::ZeroCentred, contract);
    CHECK(same_bits(card, contract));
    kernels::rms_norm(x, {}, group, 1e-6, false, card);
    numerics::rms_norm(x, ones, 1e-6f, numerics::NormWeight::Plain, contract);
    CHECK(same_bits(card, contract));
    auto lw = random_row(n, rng), lb = random_row(n, rng);
    std::vector<float> two(2 * n), two_card(2 * n);
    auto x2 = random_row(2 * n, rng);
    kernels::layer_norm(x2, lw, lb, n, 1e-5, two_card);
    numerics::layer_norm(std::span<const float>(x2).first(n), lw, lb, 1e-5f, std::span<float>(two).first(n));
    numerics::layer_norm(std::span<const float>(x2).subspan(n), lw, lb, 1e-5f,
                         std::span<float>(two).subspan(n));
    CHECK(same_bits(two_card, two));
    kernels::l2_norm(x, group, 1e-6, 0.125, card);
    numerics::l2_norm(x, group, 1e-6f, contract);
    for (auto& v : contract)
        v = v * 0.125f;
    CHECK(same_bits(card, contract));
    auto z = random_row(n, rng);
    kernels::gated_norm(x, z, w, group, 1e-6, card);
    numerics::gated_rms_norm(x, z, w, 1e-6f, contract);
    CHECK(same_bits(card, contract));
}

TEST_CASE("the card's elementwise units, arg-max and gates are the contract's") {
    std::mt19937_64 rng(92);
    const std::size_t n = 300;
    auto a = random_row(n, rng), b = random_row(n, rng);
    std::vector<float> card(n), contract(n);
    kernels::silu_mul(a, b, card);
    numerics::silu_mul(a, b, contract);
    CHECK(same_bits(card, contract));
    kernels::sigmoid_gate(a, b, card);
    numerics::sigmoid_gate(a, b, contract);
    CHECK(same_bits(card, contract));
    kernels::add(a, b, card);
    numerics::add(a, b, contract);
    CHECK(same_bits(card, contract));
    std::vector<float> best(3);
    kernels::argmax(a, 100, best);
    for (std::size_t r = 0; r < 3; ++r)
        CHECK(best[r] == float(numerics::argmax(std::span<const float>(a).subspan(100 * r, 100))));
    const std::size_t heads = 8, rows = 3;
    auto gb = random_row(heads * rows, rng), ga = random_row(heads * rows, rng),
         a_log = random_row(heads, rng), dt = random_row(heads, rng);
    std::vector<float> beta(heads * rows), g(heads * rows), beta2(heads), g2(heads);
    kernels::gates(gb, ga, a_log, dt, beta, g);
    for (std::size_t r = 0; r < rows; ++r) {
        numerics::gdn_gates(std::span<const float>(ga).subspan(r * heads, heads),
                            std::span<const float>(gb).subspan(r * heads, heads), a_log, dt, beta2, g2);
        CHECK(std::memcmp(beta2.data(), beta.data() + r * heads, 4 * heads) == 0);
        CHECK(std::memcmp(g2.data(), g.data() + r * heads, 4 * heads) == 0);
    }
}
