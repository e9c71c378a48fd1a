// The router and the expert combine: the fast kernels against their spec bit for bit on random and
// adversarial rows, ties to the lower expert index, and the stated error bound against the exact
// softmax of the same logits.

#include "engine/error.hpp"
#include "engine/numerics/combine.hpp"
#include "engine/numerics/router.hpp"
#include "engine/numerics/spec/router.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float fmax = std::numeric_limits<float>::max();

/// The fast router's choice and weights for `k` experts.
spec::Routing fast_route(std::span<const float> logits, std::size_t k, RouterNorm norm) {
    spec::Routing r;
    r.experts.resize(k);
    r.weights.resize(k);
    route(logits, norm, r.experts, r.weights);
    return r;
}

void require_same(const spec::Routing& a, const spec::Routing& b) {
    REQUIRE(a.experts == b.experts);
    REQUIRE(a.weights.size() == b.weights.size());
    for (std::size_t i = 0; i < a.weights.size(); ++i) {
        INFO("weight " << i << ": " << a.weights[i] << " vs " << b.weights[i]);
        REQUIRE(same_bits(a.weights[i], b.weights[i]));
    }
}

void require_same(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("element " << i << ": " << a[i] << " vs " << b[i]);
        REQUIRE(same_bits(a[i], b[i]));
    }
}

/// Adversarial logit rows of `n`: equal values, signed zeros, extremes, near ties, huge spreads,
/// values whose exponentials collide or underflow, subnormals.
std::vector<std::vector<float>> adversarial_logits(std::size_t n, std::mt19937_64& rng) {
    std::vector<std::vector<float>> rows;
    rows.emplace_back(n, 1.5f);
    rows.emplace_back(n, -0.0f);
    std::vector<float> zeros(n), extremes(n), near(n), spread(n), collide(n), few(n);
    for (std::size_t e = 0; e < n; ++e) {
        zeros[e] = e % 3 == 0 ? -0.0f : 0.0f;
        extremes[e] = e % 4 == 0 ? fmax : e % 4 == 1 ? -fmax : e % 4 == 2 ? 0x1p-149f : -1.0f;
        near[e] = std::nextafter(2.0f, e % 2 ? 3.0f : 1.0f) + (e % 5 == 0 ? 0x1p-22f : 0.0f);
        spread[e] = std::ldexp(e % 2 ? -1.0f : 1.0f, static_cast<int>(e % 40) - 10);
        collide[e] = 200.0f - 0x1p-16f * static_cast<float>(e % 7); // exp(z - m) collide near 1
        few[e] = static_cast<float>(rng() % 3);                     // many ties among three values
    }
    for (auto* r : {&zeros, &extremes, &near, &spread, &collide, &few})
        rows.push_back(*r);
    for (RowKind kind : {RowKind::Unit, RowKind::Normal, RowKind::Wide, RowKind::Subnormal, RowKind::Ties,
                         RowKind::Cancelling, RowKind::Extremes, RowKind::Outliers})
        rows.push_back(make_row(kind, n, rng));
    return rows;
}

/// The exact softmax weights (in long double) of the chosen `experts` of `logits`.
std::vector<long double> exact_weights(std::span<const float> logits, std::span<const std::uint32_t> experts,
                                       RouterNorm norm) {
    const long double m = *std::max_element(logits.begin(), logits.end());
    long double sum = 0;
    if (norm == RouterNorm::All)
        for (float z : logits)
            sum += std::exp(static_cast<long double>(z) - m);
    else
        for (auto e : experts)
            sum += std::exp(static_cast<long double>(logits[e]) - m);
    std::vector<long double> w;
    for (auto e : experts)
        w.push_back(std::exp(static_cast<long double>(logits[e]) - m) / sum);
    return w;
}

} // namespace

TEST_CASE("the router's ties go to the lower expert index") {
    for (RouterNorm norm : {RouterNorm::TopK, RouterNorm::All}) {
        const std::vector<float> equal(8, 0.25f);
        auto r = fast_route(equal, 3, norm);
        REQUIRE(r.experts == std::vector<std::uint32_t>{0, 1, 2});
        REQUIRE(r.weights[0] == r.weights[1]);
        REQUIRE(r.weights[1] == r.weights[2]);
        REQUIRE(r.weights[0] == (norm == RouterNorm::TopK ? 1.0f / 3.0f : 0.125f));

        const std::vector<float> tie_at_the_cut{1.0f, 3.0f, 2.0f, 3.0f, 2.0f, 3.0f};
        REQUIRE(fast_route(tie_at_the_cut, 2, norm).experts == std::vector<std::uint32_t>{1, 3});
        REQUIRE(fast_route(tie_at_the_cut, 4, norm).experts == std::vector<std::uint32_t>{1, 3, 5, 2});

        const std::vector<float> signed_zeros{-1.0f, 0.0f, -0.0f, 0.0f};
        REQUIRE(fast_route(signed_zeros, 2, norm).experts == std::vector<std::uint32_t>{1, 2});
        const std::vector<float> negative_zero_first{-0.0f, 0.0f};
        REQUIRE(fast_route(negative_zero_first, 1, norm).experts == std::vector<std::uint32_t>{0});

        for (const auto& logits : {equal, tie_at_the_cut, signed_zeros, negative_zero_first})
            for (std::size_t k = 1; k <= logits.size(); ++k)
                require_same(fast_route(logits, k, norm), spec::route(logits, k, norm));
    }
}

TEST_CASE("the router chooses the top k logits in order, as a stable sort does") {
    std::mt19937_64 rng(311);
    for (int trial = 0; trial < 200; ++trial) {
        const std::size_t E = 1 + rng() % 64, k = 1 + rng() % E;
        std::vector<float> logits(E);
        for (auto& z : logits)
            z = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.5f; // many ties
        std::vector<std::uint32_t> order(E);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return logits[a] > logits[b]; });
        order.resize(k);
        REQUIRE(fast_route(logits, k, RouterNorm::TopK).experts == order);
    }
}

TEST_CASE("the router equals its spec bit for bit on random and adversarial logits") {
    std::mt19937_64 rng(312);
    for (std::size_t E : {1u, 2u, 7u, 32u, 128u, 512u})
        for (const auto& logits : adversarial_logits(E, rng))
            for (std::size_t want : {1u, 2u, 8u, 10u, 512u})
                for (RouterNorm norm : {RouterNorm::TopK, RouterNorm::All}) {
                    const std::size_t k = std::min<std::size_t>(want, E);
                    INFO("E " << E << ", k " << k << ", norm " << name(norm) << ", first logit "
                              << logits[0]);
                    require_same(fast_route(logits, k, norm), spec::route(logits, k, norm));
                }
}

TEST_CASE("a NaN or an infinite logit makes every weight NaN, in the fast router and its spec") {
    for (float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()})
        for (RouterNorm norm : {RouterNorm::TopK, RouterNorm::All}) {
            const std::vector<float> logits{0.5f, 2.0f, bad, -1.0f, 3.0f};
            auto r = fast_route(logits, 2, norm);
            REQUIRE(r.experts == std::vector<std::uint32_t>{0, 1});
            for (float w : r.weights)
                REQUIRE(same_bits(w, std::numeric_limits<float>::quiet_NaN()));
            require_same(r, spec::route(logits, 2, norm));
        }
}

TEST_CASE("the router's weights lie within (ln N + 5) 2^-24 of the exact softmax") {
    std::mt19937_64 rng(313);
    std::vector<std::vector<float>> rows;
    for (std::size_t E : {8u, 32u, 128u, 512u}) {
        for (float scale : {0.01f, 0.3f, 1.0f, 4.0f, 16.0f, 100.0f})
            for (int t = 0; t < 8; ++t) {
                auto row = make_row(RowKind::Unit, E, rng);
                for (auto& z : row)
                    z *= scale;
                rows.push_back(row);
            }
        // The worst case of the bound: one top logit and the rest a gap a below it, where the mean
        // gap under the softmax is largest (a near ln E), and where exp(z - m) rounds worst.
        for (float a : {0.3f, 1.0f, 2.0f, 4.0f, 5.5f, 6.2f, 8.0f, 20.0f, 90.0f}) {
            std::vector<float> row(E, 7.0f - a);
            row[rng() % E] = 7.0f;
            rows.push_back(row);
        }
        for (auto& row : adversarial_logits(E, rng))
            if (std::all_of(row.begin(), row.end(), [](float z) { return std::isfinite(z); }))
                rows.push_back(row);
    }
    for (const auto& logits : rows)
        for (std::size_t k : {std::size_t{1}, std::size_t{4}, std::size_t{8}, logits.size()})
            for (RouterNorm norm : {RouterNorm::TopK, RouterNorm::All}) {
                auto r = fast_route(logits, std::min(k, logits.size()), norm);
                auto exact = exact_weights(logits, r.experts, norm);
                const double n =
                    static_cast<double>(norm == RouterNorm::TopK ? r.experts.size() : logits.size());
                const double bound = (std::log(n) + 5.0) * 0x1p-24;
                for (std::size_t i = 0; i < exact.size(); ++i) {
                    INFO("E " << logits.size() << ", k " << r.experts.size() << ", norm " << name(norm)
                              << ", weight " << i << ": " << r.weights[i] << " vs "
                              << static_cast<double>(exact[i]));
                    REQUIRE(std::fabs(static_cast<long double>(r.weights[i]) - exact[i]) <= bound);
                }
            }
}

TEST_CASE("the router refuses a k outside 1 .. E or weights of another count") {
    const std::vector<float> logits{1.0f, 2.0f};
    std::vector<std::uint32_t> none, three(3), one(1);
    std::vector<float> w0, w3(3), w2(2);
    REQUIRE_THROWS_AS(route(logits, RouterNorm::TopK, none, w0), cardsim::Error);
    REQUIRE_THROWS_AS(route(logits, RouterNorm::TopK, three, w3), cardsim::Error);
    REQUIRE_THROWS_AS(route(logits, RouterNorm::TopK, one, w2), cardsim::Error);
}

TEST_CASE("the expert combine equals its spec bit for bit, with and without a shared expert") {
    std::mt19937_64 rng(314);
    const std::size_t n = 96;
    const RowKind kinds[] = {RowKind::Unit,     RowKind::Normal,     RowKind::Wide,  RowKind::Subnormal,
                             RowKind::Extremes, RowKind::Cancelling, RowKind::Zeros, RowKind::Outliers};
    for (RowKind kind : kinds)
        for (std::size_t k : {1u, 2u, 8u, 10u}) {
            auto outputs = make_row(kind, k * n, rng);
            auto shared_out = make_row(kind, n, rng);
            std::vector<float> weights = make_row(RowKind::Unit, k, rng);
            for (auto& w : weights)
                w = std::fabs(w) * 0.25f;
            for (float gate : {-3.0f, 0.0f, 0.7f, 40.0f, inf, -inf}) {
                for (bool with_shared : {false, true}) {
                    std::optional<SharedExpert> shared;
                    if (with_shared) shared = SharedExpert{gate, shared_out};
                    std::vector<float> y(n);
                    combine(weights, outputs, shared, y);
                    INFO("kind " << static_cast<int>(kind) << ", k " << k << ", gate " << gate);
                    require_same(y, spec::combine(weights, outputs, n, shared));
                }
            }
        }
}

TEST_CASE("the expert combine does not depend on the order of the experts") {
    std::mt19937_64 rng(315);
    const std::size_t n = 64, k = 8;
    for (RowKind kind : {RowKind::Cancelling, RowKind::Wide, RowKind::Unit}) {
        auto outputs = make_row(kind, k * n, rng);
        auto weights = make_row(RowKind::Unit, k, rng);
        auto shared_out = make_row(kind, n, rng);
        std::vector<float> y(n), y2(n);
        combine(weights, outputs, SharedExpert{0.3f, shared_out}, y);
        std::vector<std::size_t> perm(k);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<float> w2(k), o2(k * n);
        for (std::size_t i = 0; i < k; ++i) {
            w2[i] = weights[perm[i]];
            std::copy_n(outputs.begin() + static_cast<std::ptrdiff_t>(perm[i] * n), n,
                        o2.begin() + static_cast<std::ptrdiff_t>(i * n));
        }
        combine(w2, o2, SharedExpert{0.3f, shared_out}, y2);
        require_same(y, y2);
    }
}

TEST_CASE("the expert combine is the correctly rounded sum of the weighted outputs") {
    std::mt19937_64 rng(316);
    const std::size_t n = 256, k = 8;
    auto outputs = make_row(RowKind::Unit, k * n, rng);
    auto weights = make_row(RowKind::Unit, k, rng);
    auto shared_out = make_row(RowKind::Unit, n, rng);
    const float gate = 0.4f;
    std::vector<float> y(n);
    combine(weights, outputs, SharedExpert{gate, shared_out}, y);
    const long double g = 1.0L / (1.0L + std::exp(-static_cast<long double>(gate)));
    for (std::size_t c = 0; c < n; ++c) {
        long double sum = 0;
        for (std::size_t i = 0; i < k; ++i)
            sum += static_cast<long double>(weights[i]) * outputs[i * n + c]; // exact products
        // g rounded to f32 first (the contract's sigmoid), then the exact product.
        sum += static_cast<long double>(static_cast<float>(g)) * shared_out[c];
        const float want = static_cast<float>(sum);
        INFO("column " << c);
        REQUIRE(std::fabs(y[c] - want) <= std::fabs(std::nextafter(want, inf) - want));
    }
}

TEST_CASE("a non-finite weight makes the combined row NaN, a non-finite output value only its column") {
    const std::size_t n = 4;
    std::vector<float> outputs{1, 2, 3, 4, 5, 6, 7, 8}, shared_out{1, 1, 1, 1}, y(n);
    std::vector<float> weights{0.5f, std::numeric_limits<float>::quiet_NaN()};
    combine(weights, outputs, std::nullopt, y);
    for (float v : y)
        REQUIRE(std::isnan(v));
    weights[1] = 0.5f;
    outputs[6] = inf;
    combine(weights, outputs, SharedExpert{-inf, shared_out}, y); // sigmoid(-inf) = 0: a finite gate
    REQUIRE(y[0] == 3.0f);
    REQUIRE(std::isnan(y[2]));
    REQUIRE(y[3] == 6.0f);
    require_same(y, spec::combine(weights, outputs, n, SharedExpert{-inf, shared_out}));
    REQUIRE_THROWS_AS(combine(weights, std::vector<float>(7), std::nullopt, y), cardsim::Error);
}

TEST_CASE("an expert-parallel combine's parts, joined, are the one-card combine's bits whatever card holds "
          "each expert, and a NaN on one card makes the column NaN") {
    std::mt19937_64 rng(317);
    const std::size_t n = 64;
    std::size_t exact = 0, columns = 0;
    for (RowKind kind : {RowKind::Unit, RowKind::Normal, RowKind::Cancelling, RowKind::Zeros, RowKind::Wide})
        for (std::size_t k : {1u, 4u, 8u})
            for (std::size_t cards : {2u, 3u, 4u})
                for (bool with_shared : {false, true}) {
                    auto outputs = make_row(kind, k * n, rng);
                    auto shared_out = make_row(kind, n, rng);
                    auto weights = make_row(RowKind::Unit, k, rng);
                    for (auto& w : weights)
                        w = std::fabs(w) * 0.25f;
                    std::optional<SharedExpert> shared;
                    if (with_shared) shared = SharedExpert{0.7f, shared_out};
                    std::vector<float> want(n);
                    combine(weights, outputs, shared, want);
                    // Each slot's expert lives on a random card; the shared expert on another.
                    std::vector<std::size_t> card_of(k);
                    for (auto& c : card_of)
                        c = rng() % cards;
                    const std::size_t shared_card = rng() % cards;
                    std::vector<std::vector<PartialSum>> parts(cards, std::vector<PartialSum>(n));
                    for (std::size_t c = 0; c < cards; ++c) {
                        std::vector<float> mine(k * n, 0.0f); // another card's slot is +0
                        for (std::size_t i = 0; i < k; ++i)
                            if (card_of[i] == c)
                                std::copy_n(outputs.begin() + std::ptrdiff_t(i * n), n,
                                            mine.begin() + std::ptrdiff_t(i * n));
                        combine_partial(weights, mine, c == shared_card ? shared : std::nullopt, parts[c]);
                    }
                    for (std::size_t col = 0; col < n; ++col) {
                        std::vector<PartialSum> column;
                        for (auto& p : parts)
                            column.push_back(p[col]);
                        ++columns;
                        if (!exact_join(column)) continue;
                        ++exact;
                        INFO("kind " << int(kind) << ", k " << k << ", " << cards << " cards, column "
                                     << col);
                        REQUIRE(same_bits(join(column), want[col]));
                    }
                }
    // Outputs within a window of each other (all but the Wide rows' far-apart values) always join
    // exactly.
    CHECK(exact > columns * 3 / 4);

    const std::vector<float> weights{0.5f, 0.25f}, none(8, 0.0f);
    std::vector<float> outputs{1, 2, 3, 4, 5, 6, 7, 8};
    outputs[5] = std::numeric_limits<float>::quiet_NaN(); // slot 1's column 1, on card 1
    std::vector<float> first(8, 0.0f), second(8, 0.0f);
    std::copy_n(outputs.begin(), 4, first.begin());
    std::copy_n(outputs.begin() + 4, 4, second.begin() + 4);
    std::vector<PartialSum> a(4), b(4);
    combine_partial(weights, first, std::nullopt, a);
    combine_partial(weights, second, std::nullopt, b);
    REQUIRE(std::isnan(join(std::vector{a[1], b[1]})));
    REQUIRE(same_bits(join(std::vector{a[0], b[0]}), 0.5f * 1 + 0.25f * 5));
    const std::vector<float> nan_weight{0.5f, std::numeric_limits<float>::quiet_NaN()};
    combine_partial(nan_weight, none, std::nullopt, a); // every card sees the NaN weight
    for (auto& p : a)
        REQUIRE((p.flags & PartialSum::Nan));
}
