// Attention: the fast vector and array paths against the exact spec for every cache format,
// position-order invariance of vector math, accuracy against f64 attention, and NaN propagation.

#include "engine/error.hpp"
#include "engine/numerics/attention.hpp"
#include "engine/numerics/spec/attention.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

/// A cache of `positions` rows of keys and values drawn from `kind`, kept as `keep`.
struct Cache {
    Keep keep;
    std::size_t head_dim, positions;
    std::vector<float> k, v;
    std::vector<std::byte> kb, vb;
    CacheView view() const { return CacheView{keep, head_dim, positions, kb, vb}; }
};

Cache make_cache(Keep keep, std::size_t n, std::size_t T, RowKind kind, std::mt19937_64& rng) {
    Cache c{keep, n, T, {}, {}, {}, {}};
    for (std::size_t t = 0; t < T; ++t) {
        auto k = make_row(kind, n, rng), v = make_row(RowKind::Unit, n, rng);
        c.k.insert(c.k.end(), k.begin(), k.end());
        c.v.insert(c.v.end(), v.begin(), v.end());
        auto kb = keep_row(k, keep), vb = keep_row(v, keep);
        c.kb.insert(c.kb.end(), kb.begin(), kb.end());
        c.vb.insert(c.vb.end(), vb.begin(), vb.end());
    }
    return c;
}

const Scheme query_schemes[] = {Scheme{Values{32}, LeastPowerOfTwo{4}, 1},
                                Scheme{Values{32}, LeastPowerOfTwo{4}, 2},
                                Scheme{Row{}, LeastPowerOfTwo{23}, 1}, Scheme{Row{}, LeastPowerOfTwo{7}, 2}};

void require_same(std::span<const float> a, std::span<const float> b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("element " << i << ": " << a[i] << " vs " << b[i]);
        REQUIRE(same_bits(a[i], b[i]));
    }
}

} // namespace

TEST_CASE("vector attention agrees with the exact spec for every cache format and for f32 rows") {
    std::mt19937_64 rng(51);
    for (Keep keep : {Keep::F32, Keep::F16, Keep::Int8Rows, Keep::Int8RowsRotated})
        for (std::size_t T : {1u, 5u, 40u})
            for (RowKind kind : {RowKind::Unit, RowKind::Normal, RowKind::Outliers, RowKind::Extremes}) {
                Cache c = make_cache(keep, 64, T, kind, rng);
                auto q = make_row(RowKind::Normal, 64, rng);
                std::vector<float> out(64);
                attend_vector(q, c.view(), 0.125f, out);
                INFO(name(keep) << " T " << T << " kind " << static_cast<int>(kind));
                require_same(out, spec::attend_vector(q, c.view(), 0.125f));
            }
}

TEST_CASE("array attention agrees with the exact spec for every cache format and query scheme") {
    std::mt19937_64 rng(52);
    for (Keep keep : {Keep::F16, Keep::Int8Rows, Keep::Int8RowsRotated})
        for (const Scheme& s : query_schemes)
            for (std::size_t T : {1u, 33u, 70u})
                for (RowKind kind : {RowKind::Unit, RowKind::Outliers}) {
                    Cache c = make_cache(keep, 64, T, kind, rng);
                    auto q = make_row(kind, 64, rng);
                    std::vector<float> out(64);
                    attend_array(q, c.view(), 0.125f, s, out);
                    INFO(name(keep) << " " << to_string(s) << " T " << T);
                    require_same(out, spec::attend_array(q, c.view(), 0.125f, s));
                }
}

TEST_CASE("vector attention does not depend on the order of the cache's positions") {
    std::mt19937_64 rng(53);
    for (Keep keep : {Keep::F32, Keep::F16, Keep::Int8Rows}) {
        Cache c = make_cache(keep, 32, 24, RowKind::Unit, rng);
        auto q = make_row(RowKind::Unit, 32, rng);
        std::vector<float> want(32), got(32);
        attend_vector(q, c.view(), 0.25f, want);
        const std::size_t row = kept_bytes(keep, 32);
        std::vector<std::size_t> order(24);
        for (std::size_t i = 0; i < 24; ++i)
            order[i] = i;
        std::shuffle(order.begin(), order.end(), rng);
        Cache p = c;
        for (std::size_t t = 0; t < 24; ++t) {
            std::copy_n(c.kb.begin() + static_cast<std::ptrdiff_t>(order[t] * row), row,
                        p.kb.begin() + static_cast<std::ptrdiff_t>(t * row));
            std::copy_n(c.vb.begin() + static_cast<std::ptrdiff_t>(order[t] * row), row,
                        p.vb.begin() + static_cast<std::ptrdiff_t>(t * row));
        }
        attend_vector(q, p.view(), 0.25f, got);
        require_same(got, want);
    }
}

TEST_CASE("both attention maths stay close to f64 attention over the original rows") {
    std::mt19937_64 rng(54);
    const std::size_t n = 128, T = 96;
    for (Keep keep : {Keep::F32, Keep::F16, Keep::Int8Rows, Keep::Int8RowsRotated}) {
        Cache c = make_cache(keep, n, T, RowKind::Unit, rng);
        auto q = make_row(RowKind::Unit, n, rng);
        const double scale = 1 / std::sqrt(static_cast<double>(n));
        std::vector<double> s(T), ref(n, 0.0);
        double m = -1e300, z = 0;
        for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t j = 0; j < n; ++j)
                s[t] += static_cast<double>(q[j]) * c.k[t * n + j];
            s[t] *= scale;
            m = std::max(m, s[t]);
        }
        for (std::size_t t = 0; t < T; ++t) {
            const double p = std::exp(s[t] - m);
            z += p;
            for (std::size_t j = 0; j < n; ++j)
                ref[j] += p * c.v[t * n + j];
        }
        std::vector<float> vec(n), arr(n);
        attend_vector(q, c.view(), static_cast<float>(scale), vec);
        if (keep != Keep::F32) // array math reads no f32 rows
            attend_array(q, c.view(), static_cast<float>(scale), Scheme{Row{}, LeastPowerOfTwo{WIDE_BITS}, 1},
                         arr);
        const double tol_vec = keep == Keep::F32   ? 1e-5
                               : keep == Keep::F16 ? 2e-3
                                                   : 3e-2,
                     tol_arr = keep == Keep::F16 ? 2e-2 : 5e-2;
        for (std::size_t j = 0; j < n; ++j) {
            INFO(name(keep) << " element " << j);
            REQUIRE(std::abs(vec[j] - ref[j] / z) <= tol_vec);
            if (keep != Keep::F32) REQUIRE(std::abs(arr[j] - ref[j] / z) <= tol_arr);
        }
    }
}

TEST_CASE("a NaN or an infinity in the query or the cache makes every attention output NaN") {
    std::mt19937_64 rng(55);
    Cache c = make_cache(Keep::F16, 32, 4, RowKind::Normal, rng);
    auto q = make_row(RowKind::Normal, 32, rng);
    std::vector<float> out(32);
    q[3] = NAN;
    attend_vector(q, c.view(), 1.0f, out);
    for (float v : out)
        REQUIRE(std::isnan(v));
    q[3] = 1.0f;
    c.vb[2 * (2 * 32 + 5) + 1] = std::byte{0x7C}; // value row 2, element 5: +inf
    c.vb[2 * (2 * 32 + 5)] = std::byte{0};
    attend_array(q, c.view(), 1.0f, query_schemes[0], out);
    for (float v : out)
        REQUIRE(std::isnan(v));
    attend_vector(q, c.view(), 1.0f, out);
    for (float v : out)
        REQUIRE(std::isnan(v));
}

TEST_CASE("a malformed cache is refused with a sentence") {
    std::vector<std::byte> bytes(10);
    std::vector<float> q(4, 1.0f), out(4);
    REQUIRE_THROWS_AS(attend_vector(q, CacheView{Keep::F16, 4, 2, bytes, bytes}, 1.0f, out), cardsim::Error);
    REQUIRE_THROWS_AS(attend_vector(q, CacheView{Keep::F16, 4, 0, {}, {}}, 1.0f, out), cardsim::Error);
    std::vector<std::byte> f32_row(16);
    REQUIRE_THROWS_AS(
        attend_array(q, CacheView{Keep::F32, 4, 1, f32_row, f32_row}, 1.0f, query_schemes[0], out),
        cardsim::Error);
    REQUIRE_THROWS_AS(attend_vector(q, CacheView{Keep::F32, 4, 2, f32_row, f32_row}, 1.0f, out),
                      cardsim::Error);
}

TEST_CASE("a sink takes its share of the softmax: both maths agree with the spec bit for bit, with f64 "
          "attention whose sum carries exp(sink - m), and a non-finite sink makes the head NaN") {
    std::mt19937_64 rng(56);
    const std::size_t n = 64;
    for (Keep keep : {Keep::F16, Keep::Int8Rows, Keep::Int8RowsRotated})
        for (std::size_t T : {1u, 7u, 40u})
            for (float sink : {-30.0f, -1.5f, 0.0f, 0.75f, 6.0f}) {
                Cache c = make_cache(keep, n, T, RowKind::Unit, rng);
                auto q = make_row(RowKind::Unit, n, rng);
                const float scale = 0.125f;
                std::vector<float> vec(n), arr(n);
                attend_vector(q, c.view(), scale, vec, sink);
                attend_array(q, c.view(), scale, query_schemes[0], arr, sink);
                INFO(name(keep) << " T " << T << " sink " << sink);
                require_same(vec, spec::attend_vector(q, c.view(), scale, sink));
                require_same(arr, spec::attend_array(q, c.view(), scale, query_schemes[0], sink));
                // f64 over the original rows: the sink in the normaliser only.
                std::vector<double> s(T), ref(n, 0.0);
                double m = sink, z = 0;
                for (std::size_t t = 0; t < T; ++t) {
                    for (std::size_t j = 0; j < n; ++j)
                        s[t] += double(q[j]) * c.k[t * n + j];
                    s[t] *= scale;
                    m = std::max(m, s[t]);
                }
                z = std::exp(double(sink) - m);
                for (std::size_t t = 0; t < T; ++t) {
                    const double p = std::exp(s[t] - m);
                    z += p;
                    for (std::size_t j = 0; j < n; ++j)
                        ref[j] += p * c.v[t * n + j];
                }
                // Against the f64: the cache's keep error alone (the bounds of the test above).
                const double tol = keep == Keep::F16 ? 2e-3 : 3e-2;
                for (std::size_t j = 0; j < n; ++j)
                    REQUIRE(std::abs(vec[j] - ref[j] / z) <= tol);
            }
    Cache c = make_cache(Keep::F16, n, 4, RowKind::Unit, rng);
    auto q = make_row(RowKind::Unit, n, rng);
    std::vector<float> out(n);
    attend_vector(q, c.view(), 0.125f, out, std::numeric_limits<float>::quiet_NaN());
    for (float v : out)
        REQUIRE(std::isnan(v));
    attend_vector(q, c.view(), 0.125f, out, -std::numeric_limits<float>::infinity());
    for (float v : out)
        REQUIRE(std::isnan(v));
}
