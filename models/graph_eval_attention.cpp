// The f64 evaluation of attention: rotary, self attention, caches, latent attention
// (graph_eval_ops.hpp).

#include "models/graph_eval_ops.hpp"

#include "engine/error.hpp"
#include "engine/numerics/rotary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cardsim::models {

using namespace graph;
using namespace eval_math;

void GraphEvaluator::OpEval::eval(std::size_t, const Rope& o) {
    Matrix& x = V(o.qkv);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t part = 0; part < 2; ++part)
            for (std::size_t h = 0; h < o.heads; ++h)
                rotate(&x.data[r * x.cols + (part * o.heads + h) * o.head_dim], o.head_dim, b.position[r],
                       o.theta);
}

void GraphEvaluator::OpEval::eval(std::size_t, const Attention& o) {
    const Matrix& x = V(o.qkv);
    Matrix& out = V(o.out);
    const std::size_t hd = o.head_dim, H = o.heads * hd;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    for (std::size_t r = 0; r < x.rows; ++r) {
        std::vector<std::size_t> keys;
        for (std::size_t j = 0; j < x.rows; ++j) {
            if (b.token_seq[j] != b.token_seq[r]) continue;
            const std::size_t d =
                b.position[j] > b.position[r] ? b.position[j] - b.position[r] : b.position[r] - b.position[j];
            if (!o.window || d <= *o.window) keys.push_back(j);
        }
        for (std::size_t h = 0; h < o.heads; ++h) {
            std::vector<double> p;
            for (auto j : keys) {
                double s = 0;
                for (std::size_t i = 0; i < hd; ++i)
                    s += x.data[r * x.cols + h * hd + i] * x.data[j * x.cols + H + h * hd + i];
                p.push_back(s * scale);
            }
            softmax(p);
            for (std::size_t i = 0; i < hd; ++i) {
                double s = 0;
                for (std::size_t m = 0; m < keys.size(); ++m)
                    s += p[m] * x.data[keys[m] * x.cols + 2 * H + h * hd + i];
                out.data[r * out.cols + h * hd + i] = s;
            }
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Rotate& o) {
    Matrix& x = V(o.x);
    if (o.yarn) { // YaRN's frequencies in f64, cos and sin scaled by the attention factor
        const auto& y = *o.yarn;
        const auto f = numerics::yarn_frequencies_f64(
            o.rotary_dim, o.theta, {y.factor, y.beta_fast, y.beta_slow, y.original_max, y.truncate});
        const std::size_t half = o.rotary_dim / 2;
        for (std::size_t r = 0; r < x.rows; ++r)
            for (std::size_t h0 = 0; h0 < x.cols; h0 += o.head_dim)
                for (std::size_t i = 0; i < half; ++i) {
                    const double angle = static_cast<double>(b.position[r]) * f[i];
                    const double c = std::cos(angle) * y.attention_factor,
                                 s = std::sin(angle) * y.attention_factor;
                    double* p = &x.data[r * x.cols + h0];
                    const double a0 = p[i], a1 = p[i + half];
                    p[i] = a0 * c - a1 * s;
                    p[i + half] = a1 * c + a0 * s;
                }
        return;
    }
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t h0 = 0; h0 < x.cols; h0 += o.head_dim)
            rotate(&x.data[r * x.cols + h0], o.rotary_dim, b.position[r], o.theta, o.interleaved);
}

void GraphEvaluator::OpEval::eval(std::size_t, const CacheAppend& o) {
    const Matrix& x = V(o.x);
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto& c = state(b, r, o.cache);
        c.resize((b.position[r] + 1) * x.cols);
        std::copy_n(x.row(r).begin(), x.cols,
                    c.begin() + static_cast<std::ptrdiff_t>(b.position[r] * x.cols));
    }
}

void GraphEvaluator::OpEval::eval(std::size_t index, const AttendCache& o) {
    const Matrix& q = V(o.q);
    Matrix& out = V(o.out);
    const std::size_t hd = o.head_dim, kvw = o.kv_heads * hd, group = o.heads / o.kv_heads;
    const std::vector<double>* sinks = o.sinks ? &constant(*o.sinks) : nullptr;
    for (std::size_t r = 0; r < q.rows; ++r) {
        const auto& keys = state(b, r, o.keys);
        const auto& values = state(b, r, o.values);
        const std::size_t pos = b.position[r];
        if (keys.size() < (pos + 1) * kvw || values.size() < (pos + 1) * kvw)
            throw std::logic_error(fmt::format("op {}: the cache lacks position {}", index, pos));
        const std::size_t first = o.window && pos + 1 > *o.window ? pos + 1 - *o.window : 0;
        for (std::size_t h = 0; h < o.heads; ++h) {
            const std::size_t kh = h / group;
            std::vector<double> p;
            for (std::size_t j = first; j <= pos; ++j) {
                double s = 0;
                for (std::size_t i = 0; i < hd; ++i)
                    s += q.data[r * q.cols + h * hd + i] * keys[j * kvw + kh * hd + i];
                s *= o.scale;
                if (o.softcap) s = *o.softcap * std::tanh(s / *o.softcap);
                p.push_back(s);
            }
            if (sinks) p.push_back((*sinks)[h]);
            softmax(p);
            for (std::size_t i = 0; i < hd; ++i) {
                double s = 0;
                for (std::size_t j = first; j <= pos; ++j)
                    s += p[j - first] * values[j * kvw + kh * hd + i];
                out.data[r * out.cols + h * hd + i] = s;
            }
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const HeadMatmul& o) {
    const auto& w = constant(o.w);
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t k = x.cols / o.heads, n = out.cols / o.heads;
    const bool t = std::visit([](const auto& v) { return v.transpose; }, o.w.view);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t h = 0; h < o.heads; ++h)
            for (std::size_t j = 0; j < n; ++j) {
                double s = 0;
                for (std::size_t i = 0; i < k; ++i)
                    s += (t ? w[(h * n + j) * k + i] : w[(h * k + i) * n + j]) *
                         x.data[r * x.cols + h * k + i];
                out.data[r * out.cols + h * n + j] = s;
            }
}

void GraphEvaluator::OpEval::eval(std::size_t index, const LatentAttendCache& o) {
    const Matrix& ql = V(o.q_latent);
    const Matrix& qr = V(o.q_rope);
    Matrix& out = V(o.out);
    const std::size_t L = o.latent_dim, R = o.rope_dim;
    for (std::size_t r = 0; r < ql.rows; ++r) {
        const auto& latent = state(b, r, o.latent);
        const auto& rope = state(b, r, o.rope);
        const std::size_t pos = b.position[r];
        if (latent.size() < (pos + 1) * L || rope.size() < (pos + 1) * R)
            throw std::logic_error(fmt::format("op {}: the latent cache lacks position {}", index, pos));
        for (std::size_t h = 0; h < o.heads; ++h) {
            std::vector<double> p;
            for (std::size_t j = 0; j <= pos; ++j) {
                double s = 0;
                for (std::size_t i = 0; i < L; ++i)
                    s += ql.data[r * ql.cols + h * L + i] * latent[j * L + i];
                for (std::size_t i = 0; i < R; ++i)
                    s += qr.data[r * qr.cols + h * R + i] * rope[j * R + i];
                p.push_back(s * o.scale);
            }
            softmax(p);
            for (std::size_t i = 0; i < L; ++i) {
                double s = 0;
                for (std::size_t j = 0; j <= pos; ++j)
                    s += p[j] * latent[j * L + i];
                out.data[r * out.cols + h * L + i] = s;
            }
        }
    }
}

} // namespace cardsim::models
