#include "engine/numerics/spec/kernels.hpp"

#include "engine/numerics/nan.hpp"
#include "engine/numerics/spec/exact.hpp"
#include "engine/numerics/spec/functions.hpp"
#include "engine/numerics/spec/window.hpp"

#include <cmath>
#include <limits>

namespace cardsim::numerics::spec {
namespace {

float f(Function fn, float x) {
    return reference(fn, x);
}

/// window_sum of a_i * b_i, exactly.
float dot(std::span<const float> a, std::span<const float> b) {
    std::vector<Rational> t;
    for (std::size_t i = 0; i < a.size(); ++i)
        t.push_back(value(a[i]) * value(b[i]));
    return window_sum(t);
}

float sum(std::span<const float> a) {
    std::vector<Rational> t;
    for (float v : a)
        t.push_back(value(v));
    return window_sum(t);
}

} // namespace

std::vector<float> rms_norm(std::span<const float> x, std::span<const float> w, float eps, NormWeight kind) {
    std::vector<float> y;
    const std::size_t g = w.size();
    for (std::size_t h = 0; h < x.size(); h += g) {
        auto xs = x.subspan(h, g);
        if (!finite(xs)) {
            y.insert(y.end(), g, qnan);
            continue;
        }
        const float r = f(Function::Rsqrt, add(div(dot(xs, xs), static_cast<float>(g)), eps));
        for (std::size_t j = 0; j < g; ++j)
            y.push_back(mul(mul(xs[j], r), kind == NormWeight::ZeroCentred ? add(1.0f, w[j]) : w[j]));
    }
    return y;
}

std::vector<float> layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                              float eps) {
    const std::size_t n = x.size();
    if (!finite(x)) return std::vector<float>(n, qnan);
    const float mean = div(sum(x), static_cast<float>(n));
    std::vector<float> d, y;
    for (float v : x)
        d.push_back(sub(v, mean));
    if (!finite(d)) return std::vector<float>(n, qnan);
    const float r = f(Function::Rsqrt, add(div(dot(d, d), static_cast<float>(n)), eps));
    for (std::size_t j = 0; j < n; ++j) {
        float v = mul(mul(d[j], r), w[j]);
        if (!b.empty()) v = add(v, b[j]);
        y.push_back(v);
    }
    return y;
}

std::vector<float> l2_norm(std::span<const float> x, std::size_t group, float eps, float scale) {
    std::vector<float> y;
    for (std::size_t h = 0; h < x.size(); h += group) {
        auto xs = x.subspan(h, group);
        if (!finite(xs)) {
            y.insert(y.end(), group, qnan);
            continue;
        }
        const float r = f(Function::Rsqrt, add(dot(xs, xs), eps));
        for (float v : xs)
            y.push_back(mul(mul(v, r), scale));
    }
    return y;
}

std::vector<float> silu_mul(std::span<const float> g, std::span<const float> u) {
    std::vector<float> y;
    for (std::size_t j = 0; j < g.size(); ++j)
        y.push_back(mul(f(Function::Silu, g[j]), u[j]));
    return y;
}

std::vector<float> gelu_mul(std::span<const float> g, std::span<const float> u) {
    std::vector<float> y;
    for (std::size_t j = 0; j < g.size(); ++j)
        y.push_back(mul(f(Function::Gelu, g[j]), u[j]));
    return y;
}

std::vector<float> sigmoid_gate(std::span<const float> x, std::span<const float> g) {
    std::vector<float> y;
    for (std::size_t j = 0; j < x.size(); ++j)
        y.push_back(mul(x[j], f(Function::Sigmoid, g[j])));
    return y;
}

namespace {

std::vector<float> conv(std::span<const float> x, std::span<const float> weights, std::span<const float> bias,
                        std::vector<float>& window, std::size_t K, bool silu_after) {
    const std::size_t C = x.size();
    std::vector<float> out;
    for (std::size_t c = 0; c < C; ++c) {
        std::vector<float> in, w;
        for (std::size_t j = 0; j < K; ++j) {
            in.push_back(j + 1 < K ? window[j * C + c] : x[c]);
            w.push_back(weights[c * K + j]);
        }
        if (!finite(in) || !finite(w) || (!bias.empty() && !std::isfinite(bias[c]))) {
            out.push_back(qnan);
            continue;
        }
        std::vector<Rational> t;
        for (std::size_t j = 0; j < K; ++j)
            t.push_back(value(w[j]) * value(in[j]));
        if (!bias.empty()) t.push_back(value(bias[c]));
        const float sum = window_sum(t);
        out.push_back(silu_after ? f(Function::Silu, sum) : sum);
    }
    // the window: drop the oldest row, keep the current token
    std::vector<float> next;
    for (std::size_t j = 1; j + 1 < K; ++j)
        for (std::size_t c = 0; c < C; ++c)
            next.push_back(window[j * C + c]);
    if (K > 1) next.insert(next.end(), x.begin(), x.end());
    window = next;
    return out;
}

} // namespace

std::vector<float> conv_silu_step(std::span<const float> x, std::span<const float> weights,
                                  std::span<const float> bias, std::vector<float>& window, std::size_t K) {
    return conv(x, weights, bias, window, K, true);
}

std::vector<float> conv_step(std::span<const float> x, std::span<const float> weights,
                             std::span<const float> bias, std::vector<float>& window, std::size_t K) {
    return conv(x, weights, bias, window, K, false);
}

void gdn_gates(std::span<const float> a, std::span<const float> b, std::span<const float> a_log,
               std::span<const float> dt_bias, std::vector<float>& beta, std::vector<float>& g) {
    beta.clear();
    g.clear();
    for (std::size_t h = 0; h < a.size(); ++h) {
        beta.push_back(f(Function::Sigmoid, b[h]));
        g.push_back(-mul(f(Function::Exp, a_log[h]), f(Function::Softplus, add(a[h], dt_bias[h]))));
    }
}

std::vector<float> delta_rule_step(std::vector<float>& S, std::span<const float> q, std::span<const float> k,
                                   std::span<const float> v, float g, float beta, Keep keep) {
    const std::size_t dk = k.size(), dv = v.size();
    auto fail = [&] {
        S.assign(dk * dv, qnan);
        return std::vector<float>(dv, qnan);
    };
    if (!finite(S) || !finite(q) || !finite(k) || !finite(v) || !std::isfinite(g) || !std::isfinite(beta))
        return fail();
    const float decay = f(Function::Exp, g);
    for (float& s : S)
        s = mul(s, decay);
    if (!finite(S)) return fail();
    std::vector<float> delta;
    for (std::size_t j = 0; j < dv; ++j) {
        std::vector<float> column;
        for (std::size_t i = 0; i < dk; ++i)
            column.push_back(S[i * dv + j]);
        delta.push_back(mul(beta, sub(v[j], dot(column, k))));
    }
    for (std::size_t i = 0; i < dk; ++i)
        for (std::size_t j = 0; j < dv; ++j)
            S[i * dv + j] = add(S[i * dv + j], mul(k[i], delta[j]));
    if (!finite(S) || !finite(delta)) return fail();
    std::vector<float> o;
    for (std::size_t j = 0; j < dv; ++j) {
        std::vector<float> column;
        for (std::size_t i = 0; i < dk; ++i)
            column.push_back(S[i * dv + j]);
        o.push_back(dot(column, q));
    }
    if (keep == Keep::F16)
        for (float& s : S)
            s = to_f32(F16{static_cast<std::uint16_t>(round_to_format(value(s), binary16) |
                                                      (std::signbit(s) ? 0x8000u : 0u))});
    return o;
}

std::vector<float> gated_rms_norm(std::span<const float> x, std::span<const float> z,
                                  std::span<const float> w, float eps) {
    const std::size_t n = w.size();
    std::vector<float> y;
    for (std::size_t h = 0; h < x.size(); h += n) {
        auto xs = x.subspan(h, n);
        if (!finite(xs)) {
            y.insert(y.end(), n, qnan);
            continue;
        }
        const float r = f(Function::Rsqrt, add(div(dot(xs, xs), static_cast<float>(n)), eps));
        for (std::size_t j = 0; j < n; ++j)
            y.push_back(mul(mul(w[j], mul(xs[j], r)), f(Function::Silu, z[h + j])));
    }
    return y;
}

std::vector<float> rotate(std::span<const float> row, std::size_t head_dim, std::size_t rotary_dim,
                          double theta, std::uint32_t pos) {
    std::vector<float> y(row.begin(), row.end());
    const std::size_t half = rotary_dim / 2;
    for (std::size_t h = 0; h < row.size(); h += head_dim)
        for (std::size_t i = 0; i < half; ++i) {
            const float a =
                mul(static_cast<float>(pos),
                    reference_inverse_frequency(static_cast<int>(i), static_cast<int>(rotary_dim), theta));
            const float c = f(Function::Cos, a), s = f(Function::Sin, a);
            const float x1 = row[h + i], x2 = row[h + i + half];
            y[h + i] = sub(mul(x1, c), mul(x2, s));
            y[h + i + half] = add(mul(x2, c), mul(x1, s));
        }
    return y;
}

} // namespace cardsim::numerics::spec
