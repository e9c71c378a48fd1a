// The card's unit kernels (engine/kernels, what the simulator and the golden executor run) are the
// numerics contract's kernels: on random rows, laid out as the card lays them out (rows, groups,
// heads, per-sequence windows and states as bytes), each equals the exact spec of its unit
// (engine/numerics/spec) bit for bit. Their sums are order-free, and no result depends on the
// number of host threads.

#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/numerics/attention.hpp"
#include "engine/numerics/keep.hpp"
#include "engine/numerics/spec/attention.hpp"
#include "engine/numerics/spec/kernels.hpp"
#include "numerics/generators.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

using namespace cardsim;
using numerics::testing::make_row;
using numerics::testing::RowKind;
using numerics::testing::same_bits;
namespace spec = numerics::spec;

namespace {

void require_same(std::span<const float> got, std::span<const float> want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": " << got[i] << " vs " << want[i]);
        REQUIRE(same_bits(got[i], want[i]));
    }
}

/// `rows` random rows of `width` values of `kind`, one after another.
std::vector<float> rows_of(RowKind kind, std::size_t rows, std::size_t width, std::mt19937_64& rng) {
    std::vector<float> x;
    for (std::size_t r = 0; r < rows; ++r) {
        auto row = make_row(kind, width, rng);
        x.insert(x.end(), row.begin(), row.end());
    }
    return x;
}

std::span<const float> part(const std::vector<float>& x, std::size_t at, std::size_t n) {
    return std::span<const float>(x).subspan(at, n);
}

/// Restores the host's default thread count when a test ends.
struct ThreadsScope {
    explicit ThreadsScope(std::size_t n) { kernels::set_host_threads(n); }
    ~ThreadsScope() { kernels::set_host_threads(0); }
};

const RowKind kinds[] = {RowKind::Unit, RowKind::Normal, RowKind::Outliers, RowKind::Wide, RowKind::Extremes};

} // namespace

TEST_CASE("the card's norms are the contract's norms, row by row and group by group") {
    std::mt19937_64 rng(101);
    const std::size_t rows = 3, width = 64, group = 16;
    for (RowKind kind : kinds) {
        auto x = rows_of(kind, rows, width, rng), z = rows_of(RowKind::Normal, rows, width, rng);
        auto w = make_row(RowKind::Unit, width, rng), b = make_row(RowKind::Unit, width, rng);
        std::vector<float> y(rows * width), want;
        // a row norm, a per-head (grouped) norm, zero-centred, and one without a weight (ones)
        for (bool zc : {false, true}) {
            const auto k = zc ? numerics::NormWeight::ZeroCentred : numerics::NormWeight::Plain;
            kernels::rms_norm(x, w, width, 1e-6, zc, y);
            require_same(y, spec::rms_norm(x, w, 1e-6f, k));
            kernels::rms_norm(x, part(w, 0, group), group, 1e-6, zc, y);
            require_same(y, spec::rms_norm(x, part(w, 0, group), 1e-6f, k));
        }
        kernels::rms_norm(x, {}, group, 1e-6, true, y);
        require_same(y,
                     spec::rms_norm(x, std::vector<float>(group, 1.0f), 1e-6f, numerics::NormWeight::Plain));
        for (bool bias : {false, true}) {
            kernels::layer_norm(x, w, bias ? std::span<const float>(b) : std::span<const float>(), width,
                                1e-5, y);
            for (std::size_t r = 0; r < rows; ++r) {
                INFO("LayerNorm row " << r << (bias ? " with bias" : ""));
                require_same(part(y, r * width, width),
                             spec::layer_norm(part(x, r * width, width), w,
                                              bias ? std::span<const float>(b) : std::span<const float>(),
                                              1e-5f));
            }
        }
        for (double scale : {1.0, 1.0 / std::sqrt(16.0), 1.0 / std::sqrt(128.0)}) {
            kernels::l2_norm(x, group, 1e-6, scale, y);
            require_same(y, spec::l2_norm(x, group, 1e-6f, static_cast<float>(scale)));
        }
        kernels::gated_norm(x, z, part(w, 0, group), group, 1e-6, y);
        require_same(y, spec::gated_rms_norm(x, z, part(w, 0, group), 1e-6f));
    }
}

TEST_CASE("the card's elementwise units, GeGLU and arg-max are the contract's") {
    std::mt19937_64 rng(102);
    const std::size_t rows = 2, n = 48;
    for (RowKind kind : kinds) {
        auto a = rows_of(kind, rows, n, rng), b = rows_of(RowKind::Normal, rows, n, rng);
        std::vector<float> y(rows * n);
        kernels::silu_mul(a, b, y);
        require_same(y, spec::silu_mul(a, b));
        kernels::sigmoid_gate(b, a, y);
        require_same(y, spec::sigmoid_gate(b, a));
        kernels::add(a, b, y);
        for (std::size_t i = 0; i < y.size(); ++i)
            REQUIRE(same_bits(y[i], std::isnan(a[i] + b[i]) ? NAN : a[i] + b[i]));
        // GeGLU: each row is [gate | up]
        std::vector<float> fused, gate, up;
        for (std::size_t r = 0; r < rows; ++r) {
            fused.insert(fused.end(), a.begin() + r * n, a.begin() + (r + 1) * n);
            fused.insert(fused.end(), b.begin() + r * n, b.begin() + (r + 1) * n);
        }
        kernels::geglu(fused, n, y);
        require_same(y, spec::gelu_mul(a, b));
    }
    std::vector<float> x{1, 3, 3, 2, -1, NAN, 7, NAN}, top(2);
    kernels::argmax(x, 4, top);
    REQUIRE(top[0] == 1.0f); // the lowest index among equals
    REQUIRE(top[1] == 1.0f); // the first NaN wins (torch.argmax)
}

TEST_CASE("the card's conv keeps each sequence's window as f32 bytes and is the contract's conv") {
    std::mt19937_64 rng(103);
    const std::size_t seqs = 2, C = 40, K = 4;
    auto w = make_row(RowKind::Unit, C * K, rng);
    for (bool silu : {false, true}) {
        std::vector<std::byte> windows(seqs * 4 * (K - 1) * C);
        std::vector<std::vector<float>> spec_windows(seqs, std::vector<float>((K - 1) * C, 0.0f));
        for (int t = 0; t < 6; ++t) {
            auto x = rows_of(t == 2 ? RowKind::Wide : RowKind::Unit, seqs, C, rng);
            std::vector<float> y(seqs * C);
            kernels::conv(x, w, C, K, silu, windows, y);
            for (std::size_t s = 0; s < seqs; ++s) {
                INFO("token " << t << " sequence " << s << (silu ? " with SiLU" : ""));
                auto want = silu ? spec::conv_silu_step(part(x, s * C, C), w, {}, spec_windows[s], K)
                                 : spec::conv_step(part(x, s * C, C), w, {}, spec_windows[s], K);
                require_same(part(y, s * C, C), want);
                std::vector<float> kept((K - 1) * C);
                std::memcpy(kept.data(), windows.data() + s * 4 * (K - 1) * C, 4 * kept.size());
                require_same(kept, spec_windows[s]);
            }
        }
    }
}

TEST_CASE("the card's Gated-DeltaNet gates and delta rule are the contract's, per sequence and head") {
    std::mt19937_64 rng(104);
    const std::size_t seqs = 2, kh = 2, vh = 4, dk = 16, dv = 8;
    auto a_log = make_row(RowKind::Unit, vh, rng), dt = make_row(RowKind::Unit, vh, rng);
    for (auto sf : {numerics::StateFormat::F32, numerics::StateFormat::F16}) {
        const auto keep = kernels::state_keep(sf);
        const std::size_t head_bytes = numerics::kept_bytes(keep, dk * dv);
        std::vector<std::byte> state(seqs * vh * head_bytes);
        std::vector<std::vector<float>> S(seqs * vh, std::vector<float>(dk * dv, 0.0f));
        for (int t = 0; t < 4; ++t) {
            auto a = rows_of(RowKind::Unit, seqs, vh, rng), b = rows_of(RowKind::Unit, seqs, vh, rng);
            std::vector<float> beta(seqs * vh), g(seqs * vh);
            kernels::gates(b, a, a_log, dt, beta, g);
            auto q = rows_of(RowKind::Unit, seqs, kh * dk, rng),
                 k = rows_of(RowKind::Unit, seqs, kh * dk, rng),
                 v = rows_of(RowKind::Unit, seqs, vh * dv, rng);
            std::vector<float> o(seqs * vh * dv);
            kernels::delta_step(q, k, v, beta, g, kh, vh, dk, dv, sf, state, o);
            for (std::size_t s = 0; s < seqs; ++s) {
                std::vector<float> sbeta, sg;
                spec::gdn_gates(part(a, s * vh, vh), part(b, s * vh, vh), a_log, dt, sbeta, sg);
                require_same(part(beta, s * vh, vh), sbeta);
                require_same(part(g, s * vh, vh), sg);
                for (std::size_t h = 0; h < vh; ++h) {
                    INFO("step " << t << " sequence " << s << " head " << h << " state "
                                 << numerics::name(keep));
                    const std::size_t key = h / (vh / kh);
                    auto want = spec::delta_rule_step(S[s * vh + h], part(q, (s * kh + key) * dk, dk),
                                                      part(k, (s * kh + key) * dk, dk),
                                                      part(v, (s * vh + h) * dv, dv), sg[h], sbeta[h], keep);
                    require_same(part(o, (s * vh + h) * dv, dv), want);
                    std::vector<float> kept(dk * dv);
                    numerics::read_row(
                        std::span<const std::byte>(state).subspan((s * vh + h) * head_bytes, head_bytes),
                        keep, kept);
                    require_same(kept, S[s * vh + h]);
                }
            }
        }
    }
}

TEST_CASE("the card's rotations are the contract's rotation, partial and over fused q and k") {
    std::mt19937_64 rng(105);
    const std::size_t rows = 3, heads = 2, hd = 32;
    const std::vector<std::uint32_t> pos{0, 5, 1000};
    auto x = rows_of(RowKind::Unit, rows, heads * hd, rng);
    for (std::size_t rot : {hd, hd / 2}) {
        auto y = x;
        kernels::rotate(y, heads * hd, hd, rot, 1e6, pos);
        for (std::size_t r = 0; r < rows; ++r)
            require_same(part(y, r * heads * hd, heads * hd),
                         spec::rotate(part(x, r * heads * hd, heads * hd), hd, rot, 1e6, pos[r]));
    }
    auto qkv = rows_of(RowKind::Unit, rows, 3 * heads * hd, rng), y = qkv;
    kernels::rope(y, heads, hd, 10000.0, pos);
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t at = r * 3 * heads * hd;
        require_same(part(y, at, 2 * heads * hd),
                     spec::rotate(part(qkv, at, 2 * heads * hd), hd, hd, 10000.0, pos[r]));
        require_same(part(y, at + 2 * heads * hd, heads * hd),
                     part(qkv, at + 2 * heads * hd, heads * hd)); // v
    }
}

TEST_CASE("the card's self attention is the contract's vector attention over the sequence's f32 rows") {
    std::mt19937_64 rng(106);
    const std::size_t heads = 2, hd = 16, width = heads * hd;
    const std::vector<std::uint32_t> starts{0, 5, 12};
    auto qkv = rows_of(RowKind::Unit, 12, 3 * width, rng);
    for (std::size_t window : {0u, 2u}) {
        std::vector<float> out(12 * width);
        kernels::self_attention(qkv, heads, hd, window, starts, out);
        for (std::size_t s = 0; s + 1 < starts.size(); ++s)
            for (std::size_t t = starts[s]; t < starts[s + 1]; ++t)
                for (std::size_t h = 0; h < heads; ++h) {
                    const std::size_t lo = window
                                               ? std::max<std::size_t>(starts[s], t > window ? t - window : 0)
                                               : starts[s],
                                      hi = window ? std::min<std::size_t>(starts[s + 1], t + window + 1)
                                                  : starts[s + 1];
                    std::vector<std::byte> keys, values;
                    for (std::size_t j = lo; j < hi; ++j) {
                        auto kb = numerics::keep_row(part(qkv, j * 3 * width + width + h * hd, hd),
                                                     numerics::Keep::F32);
                        auto vb = numerics::keep_row(part(qkv, j * 3 * width + 2 * width + h * hd, hd),
                                                     numerics::Keep::F32);
                        keys.insert(keys.end(), kb.begin(), kb.end());
                        values.insert(values.end(), vb.begin(), vb.end());
                    }
                    INFO("window " << window << " row " << t << " head " << h);
                    require_same(part(out, t * width + h * hd, hd),
                                 spec::attend_vector(
                                     part(qkv, t * 3 * width + h * hd, hd),
                                     numerics::CacheView{numerics::Keep::F32, hd, hi - lo, keys, values},
                                     0.25f));
                }
    }
}

TEST_CASE("a card norm's sums do not depend on the order of the row: a shuffled row gives the shuffled "
          "result") {
    // Pairs of +-2^30 that cancel and values near 2^-30: a running sum (even in double) loses the
    // small values whenever a pair is half added, so its mean depends on the order; the window sum
    // gives one mean in every order.
    std::mt19937_64 rng(107);
    const std::size_t n = 64;
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i)
        x[i] = i < 32 ? std::ldexp((i % 2 ? -1.0f : 1.0f) * (1.0f + static_cast<float>(i / 2) / 8.0f), 30)
                      : std::ldexp(1.0f + static_cast<float>(i) / 64.0f, -30);
    std::vector<float> ones(n, 1.0f), want(n), got(n), shuffled(n);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    kernels::layer_norm(x, ones, {}, n, 1e-5, want);
    std::vector<float> want_rms(n), got_rms(n);
    kernels::rms_norm(x, {}, n, 1e-6, false, want_rms);
    for (int round = 0; round < 8; ++round) {
        std::shuffle(order.begin(), order.end(), rng);
        for (std::size_t i = 0; i < n; ++i)
            shuffled[i] = x[order[i]];
        kernels::layer_norm(shuffled, ones, {}, n, 1e-5, got);
        kernels::rms_norm(shuffled, {}, n, 1e-6, false, got_rms);
        for (std::size_t i = 0; i < n; ++i) {
            REQUIRE(same_bits(got[i], want[order[i]]));
            REQUIRE(same_bits(got_rms[i], want_rms[order[i]]));
        }
    }
}

TEST_CASE("the delta rule and self attention give the same bits on one host thread and on several") {
    std::mt19937_64 rng(108);
    const std::size_t kh = 2, vh = 8, dk = 32, dv = 32, heads = 4, hd = 32;
    auto q = make_row(RowKind::Unit, kh * dk, rng), k = make_row(RowKind::Unit, kh * dk, rng),
         v = make_row(RowKind::Unit, vh * dv, rng), beta = make_row(RowKind::Unit, vh, rng),
         g = make_row(RowKind::Unit, vh, rng);
    auto qkv = rows_of(RowKind::Unit, 40, 3 * heads * hd, rng);
    const std::vector<std::uint32_t> starts{0, 40};
    std::vector<std::byte> state0(vh * dk * dv * 4);
    for (std::size_t i = 0; i < vh * dk * dv; ++i) {
        const float s = make_row(RowKind::Unit, 1, rng)[0];
        std::memcpy(state0.data() + 4 * i, &s, 4);
    }
    auto run = [&](std::size_t threads) {
        ThreadsScope scope(threads);
        auto state = state0;
        std::vector<float> o(vh * dv), att(40 * heads * hd);
        kernels::delta_step(q, k, v, beta, g, kh, vh, dk, dv, numerics::StateFormat::F32, state, o);
        kernels::self_attention(qkv, heads, hd, 0, starts, att);
        std::vector<float> all(o);
        all.insert(all.end(), att.begin(), att.end());
        std::vector<float> s(vh * dk * dv);
        std::memcpy(s.data(), state.data(), state.size());
        all.insert(all.end(), s.begin(), s.end());
        return all;
    };
    const auto one = run(1), many = run(3);
    require_same(many, one);
}

TEST_CASE(
    "a store of sequences padded to a line is read as padded, also when unpadded parts would divide it") {
    // 4 sequences of 144 bytes, each padded to 192: 576 bytes, which 4 unpadded parts of 144 also fill.
    for (std::size_t r = 0; r < 3; ++r) {
        const auto s = kernels::sequence_of_row(576, 144, 3, r);
        CHECK(s.offset == r * 192);
        CHECK(s.bytes == 192);
    }
    // A store of whole unpadded sequences that is no multiple of the padded size is read unpadded.
    const auto u = kernels::sequence_of_row(5 * 144, 144, 5, 4);
    CHECK(u.offset == 4 * 144);
    CHECK_THROWS_WITH(kernels::sequence_of_row(576, 144, 4, 0),
                      Catch::Contains("holds 3 sequences of 144 bytes, and 4 rows do not divide"));
}
