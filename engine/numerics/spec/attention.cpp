#include "engine/numerics/spec/attention.hpp"

#include "engine/numerics/nan.hpp"
#include "engine/numerics/spec/activation.hpp"
#include "engine/numerics/spec/exact.hpp"
#include "engine/numerics/spec/functions.hpp"
#include "engine/numerics/spec/keep.hpp"
#include "engine/numerics/spec/window.hpp"

#include <bit>
#include <cmath>
#include <limits>
#include <optional>

namespace cardsim::numerics::spec {
namespace {

/// One kept row, decoded here: the f32 bits of each value (F32), the f16 bits (F16), or the scale
/// bits and codes.
struct Row {
    std::vector<std::uint32_t> singles;
    std::vector<std::uint16_t> halves;
    std::uint16_t scale = 0;
    std::vector<int> codes;
};

Row decode(const CacheView& c, std::span<const std::byte> rows, std::size_t t) {
    const std::size_t n = c.head_dim;
    auto b = [&](std::size_t i) { return static_cast<unsigned>(static_cast<std::uint8_t>(rows[i])); };
    Row r;
    if (c.keep == Keep::F32) {
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t at = t * 4 * n + 4 * j;
            r.singles.push_back(b(at) | b(at + 1) << 8 | b(at + 2) << 16 | b(at + 3) << 24);
        }
    } else if (c.keep == Keep::F16) {
        for (std::size_t j = 0; j < n; ++j)
            r.halves.push_back(
                static_cast<std::uint16_t>(b(t * 2 * n + 2 * j) | b(t * 2 * n + 2 * j + 1) << 8));
    } else {
        const std::size_t at = t * (n + 2);
        r.scale = static_cast<std::uint16_t>(b(at) | b(at + 1) << 8);
        for (std::size_t j = 0; j < n; ++j)
            r.codes.push_back(static_cast<std::int8_t>(rows[at + 2 + j]));
    }
    return r;
}

bool finite_half(std::uint16_t h) {
    return (h & 0x7C00) != 0x7C00;
}

/// The exact values of a decoded row, or nothing when one is not finite.
std::optional<std::vector<Rational>> values(const Row& r) {
    std::vector<Rational> v;
    if (!r.singles.empty()) {
        for (auto bits : r.singles) {
            if ((bits & 0x7F800000u) == 0x7F800000u) return std::nullopt;
            v.push_back(value(std::bit_cast<float>(bits)));
        }
        return v;
    }
    if (!r.halves.empty()) {
        for (auto h : r.halves) {
            if (!finite_half(h)) return std::nullopt;
            v.push_back(value(F16{h}));
        }
        return v;
    }
    if (!finite_half(r.scale)) return std::nullopt;
    for (int c : r.codes)
        v.push_back(Rational(c) * value(F16{r.scale}));
    return v;
}

/// softmax: p_t = exp(s_t - m) and Z (with the sink's exp(sink - m)); false when a score or the
/// sink is NaN or infinite.
bool softmax(const std::vector<float>& s, std::vector<float>& p, float& z, std::optional<float> sink) {
    float m = -std::numeric_limits<float>::infinity();
    for (float v : s) {
        if (!std::isfinite(v)) return false;
        if (v > m) m = v;
    }
    if (sink) {
        if (!std::isfinite(*sink)) return false;
        if (*sink > m) m = *sink;
    }
    std::vector<Rational> terms;
    for (float v : s) {
        p.push_back(reference(Function::Exp, sub(v, m)));
        terms.push_back(value(p.back()));
    }
    if (sink) terms.push_back(value(reference(Function::Exp, sub(*sink, m))));
    z = window_sum(terms);
    return true;
}

std::vector<float> finish(std::vector<float> o, float z, const CacheView& c) {
    for (float& v : o)
        v = div(v, z);
    if (c.keep == Keep::Int8RowsRotated) o = hadamard(o);
    return o;
}

std::vector<float> query_in_basis(std::span<const float> q, const CacheView& c) {
    std::vector<float> out(q.begin(), q.end());
    if (c.keep == Keep::Int8RowsRotated) out = hadamard(out);
    return out;
}

} // namespace

std::vector<float> attend_vector(std::span<const float> query, const CacheView& c, float scale,
                                 std::optional<float> sink) {
    const std::vector<float> nan(c.head_dim, qnan);
    if (!finite(query)) return nan;
    std::vector<float> q = query_in_basis(query, c);
    if (!finite(q)) return nan;
    std::vector<float> s;
    for (std::size_t t = 0; t < c.positions; ++t) {
        auto k = values(decode(c, c.keys, t));
        if (!k) return nan;
        std::vector<Rational> terms;
        for (std::size_t j = 0; j < c.head_dim; ++j)
            terms.push_back(value(q[j]) * (*k)[j]);
        s.push_back(mul(window_sum(terms), scale));
    }
    std::vector<float> p;
    float z = 0;
    if (!softmax(s, p, z, sink)) return nan;
    std::vector<std::vector<Rational>> v;
    for (std::size_t t = 0; t < c.positions; ++t) {
        auto row = values(decode(c, c.values, t));
        if (!row) return nan;
        v.push_back(*row);
    }
    std::vector<float> o;
    for (std::size_t j = 0; j < c.head_dim; ++j) {
        std::vector<Rational> terms;
        for (std::size_t t = 0; t < c.positions; ++t)
            terms.push_back(value(p[t]) * v[t][j]);
        o.push_back(window_sum(terms));
    }
    return finish(o, z, c);
}

std::vector<float> attend_array(std::span<const float> query, const CacheView& c, float scale,
                                const Scheme& query_scheme, std::optional<float> sink) {
    const std::size_t n = c.head_dim;
    const std::vector<float> nan(n, qnan);
    if (!finite(query)) return nan;
    std::vector<float> q = query_in_basis(query, c);
    if (!finite(q)) return nan;
    const QuantizedActivation qa = spec::quantize(q, query_scheme, n);
    const std::size_t qblocks = (n + qa.block - 1) / qa.block;
    const bool int8 = c.keep != Keep::F16;
    std::vector<float> s;
    for (std::size_t t = 0; t < c.positions; ++t) {
        Row k = decode(c, c.keys, t);
        std::vector<Rational> terms;
        for (int w = 0; w < qa.words; ++w) {
            auto code = [&](std::size_t j) { return Integer(qa.codes[w * n + j]); };
            auto step = [&](std::size_t j) { return power_of_two(qa.exponents[w * qblocks + j / qa.block]); };
            if (int8) {
                if (!finite_half(k.scale)) return nan;
                for (std::size_t c0 = 0; c0 < n; c0 += 32) {
                    Integer d = 0;
                    for (std::size_t j = c0; j < std::min(n, c0 + 32); ++j)
                        d += code(j) * k.codes[j];
                    terms.push_back(Rational(d) * value(F16{k.scale}) * step(c0));
                }
            } else {
                for (std::size_t j = 0; j < n; ++j) {
                    if (!finite_half(k.halves[j])) return nan;
                    terms.push_back(Rational(code(j)) * value(F16{k.halves[j]}) * step(j));
                }
            }
        }
        s.push_back(mul(window_sum(terms), scale));
    }
    std::vector<float> p;
    float z = 0;
    if (!softmax(s, p, z, sink)) return nan;
    std::vector<Row> v;
    std::vector<float> weights = p;
    for (std::size_t t = 0; t < c.positions; ++t) {
        v.push_back(decode(c, c.values, t));
        if (int8) {
            if (!finite_half(v.back().scale)) return nan;
            weights[t] = mul(p[t], to_f32(F16{v.back().scale}));
        }
    }
    const QuantizedActivation u =
        spec::quantize(weights, Scheme{Values{VALUE_BLOCK}, LeastPowerOfTwoOver255{}, 1}, 0);
    std::vector<float> o;
    for (std::size_t j = 0; j < n; ++j) {
        std::vector<Rational> terms;
        if (int8) {
            for (std::size_t b = 0; b * VALUE_BLOCK < c.positions; ++b) {
                Integer d = 0;
                for (std::size_t t = b * VALUE_BLOCK; t < std::min(c.positions, (b + 1) * VALUE_BLOCK); ++t)
                    d += Integer(u.codes[t]) * v[t].codes[j];
                terms.push_back(Rational(d) * power_of_two(u.exponents[b]));
            }
        } else {
            for (std::size_t t = 0; t < c.positions; ++t) {
                if (!finite_half(v[t].halves[j])) return nan;
                terms.push_back(Rational(u.codes[t]) * value(F16{v[t].halves[j]}) *
                                power_of_two(u.exponents[t / VALUE_BLOCK]));
            }
        }
        o.push_back(window_sum(terms));
    }
    return finish(o, z, c);
}

} // namespace cardsim::numerics::spec
