#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/attention.hpp"

#include "engine/error.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/hadamard.hpp"
#include "engine/numerics/nan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cardsim::numerics {
namespace {

bool all_finite(std::span<const float> x) {
    return std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); });
}

std::span<const std::byte> row(std::span<const std::byte> rows, const CacheView& c, std::size_t t) {
    const std::size_t n = kept_bytes(c.keep, c.head_dim);
    return rows.subspan(t * n, n);
}

/// The query in the cache's basis, or nothing when it is not finite.
bool prepare_query(std::span<const float> query, const CacheView& cache, std::vector<float>& q) {
    if (query.size() != cache.head_dim)
        throw Error("attention: a query of " + std::to_string(query.size()) +
                    " values over a cache of heads of " + std::to_string(cache.head_dim));
    q.assign(query.begin(), query.end());
    if (!all_finite(q)) return false;
    if (cache.keep == Keep::Int8RowsRotated) hadamard(q);
    return all_finite(q);
}

/// The softmax weights p_t and their sum Z from the scores (and the sink's share of Z); false
/// when a score or the sink is not finite.
bool softmax(std::span<const float> scores, std::vector<float>& p, float& z, std::optional<float> sink) {
    float m = -std::numeric_limits<float>::infinity();
    for (float s : scores) {
        if (!std::isfinite(s)) return false; // a NaN, or a score that overflowed
        m = std::max(m, s);
    }
    if (sink) {
        if (!std::isfinite(*sink)) return false;
        m = std::max(m, *sink);
    }
    p.resize(scores.size());
    std::vector<Term> terms(scores.size());
    for (std::size_t t = 0; t < scores.size(); ++t) {
        p[t] = numerics::exp(scores[t] - m);
        terms[t] = term(p[t]);
    }
    if (sink) terms.push_back(term(numerics::exp(*sink - m)));
    z = window_sum(terms);
    return true;
}

/// The output: the sum rounded, divided by Z, rotated back for a rotated cache.
void finish(std::span<float> out, float z, const CacheView& cache) {
    for (float& v : out)
        v = v / z;
    if (cache.keep == Keep::Int8RowsRotated) hadamard(out);
}

} // namespace

void check(const CacheView& c) {
    if (c.keep != Keep::F32 && c.keep != Keep::F16 && c.keep != Keep::Int8Rows &&
        c.keep != Keep::Int8RowsRotated)
        throw Error("attention: a cache is kept as F32, F16, Int8Rows or Int8RowsRotated, not " +
                    std::string(name(c.keep)));
    if (c.positions == 0) throw Error("attention: the cache holds no position");
    if (c.head_dim == 0) throw Error("attention: a head of 0 values");
    const std::size_t want = c.positions * kept_bytes(c.keep, c.head_dim);
    if (c.keys.size() != want || c.values.size() != want)
        throw Error("attention: " + std::to_string(c.positions) + " positions of " +
                    std::to_string(c.head_dim) + " values kept as " + std::string(name(c.keep)) + " take " +
                    std::to_string(want) + " bytes each for keys and values, found " +
                    std::to_string(c.keys.size()) + " and " + std::to_string(c.values.size()));
    if (c.keep == Keep::Int8RowsRotated && (c.head_dim & (c.head_dim - 1)) != 0)
        throw Error("attention: a rotated cache needs a power-of-two head, not " +
                    std::to_string(c.head_dim));
}

void attend_vector(std::span<const float> query, const CacheView& cache, float scale, std::span<float> out,
                   std::optional<float> sink) {
    check(cache);
    const std::size_t n = cache.head_dim, T = cache.positions;
    if (out.size() != n) throw Error("attention: the output takes " + std::to_string(n) + " values");
    std::vector<float> q, k(n), v(n), scores(T), p;
    std::fill(out.begin(), out.end(), qnan);
    if (!prepare_query(query, cache, q)) return;
    std::vector<Term> terms(n);
    for (std::size_t t = 0; t < T; ++t) {
        read_row(row(cache.keys, cache, t), cache.keep, k);
        if (!all_finite(k)) return;
        for (std::size_t j = 0; j < n; ++j)
            terms[j] = product(q[j], k[j]);
        scores[t] = window_sum(terms) * scale;
    }
    float z = 0;
    if (!softmax(scores, p, z, sink)) return;
    std::vector<Term> acc(n * T);
    for (std::size_t t = 0; t < T; ++t) {
        read_row(row(cache.values, cache, t), cache.keep, v);
        if (!all_finite(v)) return;
        for (std::size_t j = 0; j < n; ++j)
            acc[j * T + t] = product(p[t], v[j]);
    }
    for (std::size_t j = 0; j < n; ++j)
        out[j] = window_sum(std::span<const Term>(acc).subspan(j * T, T));
    finish(out, z, cache);
}

void attend_array(std::span<const float> query, const CacheView& cache, float scale,
                  const Scheme& query_scheme, std::span<float> out, std::optional<float> sink) {
    check(cache);
    if (cache.keep == Keep::F32) throw Error("attention: array math reads F16 or Int8 rows, not F32");
    const std::size_t n = cache.head_dim, T = cache.positions;
    if (out.size() != n) throw Error("attention: the output takes " + std::to_string(n) + " values");
    std::vector<float> q, scores(T), p;
    std::fill(out.begin(), out.end(), qnan);
    if (!prepare_query(query, cache, q)) return;
    const QuantizedActivation qa = quantize(q, query_scheme, n);
    if (qa.block % 32 != 0 && qa.block < n)
        throw Error("attention: query blocks of " + std::to_string(qa.block) +
                    " values; a multiple of 32 or the whole row is needed");
    const bool int8 = cache.keep != Keep::F16;
    std::vector<Term> terms;
    for (std::size_t t = 0; t < T; ++t) {
        terms.clear();
        auto bytes = row(cache.keys, cache, t);
        if (int8) {
            const Int8Row k = int8_row(bytes, n);
            if (is_nonfinite(k.scale)) return;
            const F16Parts d = parts(k.scale);
            for (int w = 0; w < qa.words; ++w)
                for (std::size_t c = 0; c < n; c += 32) {
                    std::int64_t dot = 0;
                    for (std::size_t j = c; j < std::min(n, c + 32); ++j)
                        dot += std::int64_t{qa.code(w, j)} * k.codes[j];
                    terms.push_back({dot * d.significand, qa.exponent(w, c / qa.block) + d.exponent});
                }
        } else {
            for (std::size_t j = 0; j < n; ++j) {
                const F16 h{static_cast<std::uint16_t>(static_cast<std::uint8_t>(bytes[2 * j]) |
                                                       static_cast<std::uint8_t>(bytes[2 * j + 1]) << 8)};
                if (is_nonfinite(h)) return;
                const F16Parts kp = parts(h);
                for (int w = 0; w < qa.words; ++w)
                    terms.push_back({std::int64_t{qa.code(w, j)} * kp.significand,
                                     qa.exponent(w, j / qa.block) + kp.exponent});
            }
        }
        scores[t] = window_sum(terms) * scale;
    }
    float z = 0;
    if (!softmax(scores, p, z, sink)) return;
    // The weights, each times its value row's scale, as unsigned codes per block of positions.
    std::vector<float> weights(p);
    std::vector<F16> value_scale(T);
    if (int8)
        for (std::size_t t = 0; t < T; ++t) {
            value_scale[t] = int8_row(row(cache.values, cache, t), n).scale;
            if (is_nonfinite(value_scale[t])) return;
            weights[t] = p[t] * to_f32(value_scale[t]);
        }
    const QuantizedActivation u = quantize(weights, weight_scheme);
    for (std::size_t j = 0; j < n; ++j) {
        terms.clear();
        if (int8) {
            for (std::size_t b = 0; b < u.blocks(); ++b) {
                std::int64_t dot = 0;
                for (std::size_t t = b * VALUE_BLOCK; t < std::min(T, (b + 1) * VALUE_BLOCK); ++t)
                    dot += std::int64_t{u.code(0, t)} * int8_row(row(cache.values, cache, t), n).codes[j];
                terms.push_back({dot, u.exponent(0, b)});
            }
        } else {
            for (std::size_t t = 0; t < T; ++t) {
                auto bytes = row(cache.values, cache, t);
                const F16 h{static_cast<std::uint16_t>(static_cast<std::uint8_t>(bytes[2 * j]) |
                                                       static_cast<std::uint8_t>(bytes[2 * j + 1]) << 8)};
                if (is_nonfinite(h)) {
                    std::fill(out.begin(), out.end(), qnan);
                    return;
                }
                const F16Parts vp = parts(h);
                terms.push_back({std::int64_t{u.code(0, t)} * vp.significand,
                                 u.exponent(0, t / VALUE_BLOCK) + vp.exponent});
            }
        }
        out[j] = window_sum(terms);
    }
    finish(out, z, cache);
}

} // namespace cardsim::numerics
