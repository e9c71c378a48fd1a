// The f64 evaluation of the Gated-DeltaNet mixer: conv, L2 norm, gates, delta step, gated norm
// (graph_eval_ops.hpp).

#include "models/graph_eval_ops.hpp"

#include <algorithm>
#include <cmath>

namespace cardsim::models {

using namespace graph;
using namespace eval_math;

void GraphEvaluator::OpEval::eval(std::size_t, const Conv& o) {
    const auto& w = constant(o.w);
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    const std::size_t C = x.cols, K = w.size() / C;
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto& win = state(b, r, o.window); // (K − 1) rows of C, oldest first
        for (std::size_t c = 0; c < C; ++c) {
            double s = w[c * K + K - 1] * x.data[r * C + c];
            for (std::size_t j = 0; j + 1 < K; ++j)
                s += w[c * K + j] * win[j * C + c];
            out.data[r * C + c] = s;
        }
        if (K > 1) {
            std::copy(win.begin() + static_cast<std::ptrdiff_t>(C), win.end(), win.begin());
            std::copy_n(x.row(r).begin(), C, win.end() - static_cast<std::ptrdiff_t>(C));
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const L2Norm& o) {
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t g0 = 0; g0 < x.cols; g0 += o.group) {
            double ss = 0;
            for (std::size_t i = 0; i < o.group; ++i)
                ss += x.data[r * x.cols + g0 + i] * x.data[r * x.cols + g0 + i];
            const double inv = 1.0 / std::sqrt(ss + o.eps) * o.scale;
            for (std::size_t i = 0; i < o.group; ++i)
                out.data[r * x.cols + g0 + i] = x.data[r * x.cols + g0 + i] * inv;
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GdnGates& o) {
    const auto& a_log = constant(o.a_log);
    const auto& dt = constant(o.dt_bias);
    const Matrix& bb = V(o.b);
    const Matrix& a = V(o.a);
    Matrix& beta = V(o.beta);
    Matrix& g = V(o.g);
    for (std::size_t r = 0; r < a.rows; ++r)
        for (std::size_t h = 0; h < a.cols; ++h) {
            beta.data[r * a.cols + h] = sigmoid(bb.data[r * a.cols + h]);
            g.data[r * a.cols + h] = -std::exp(a_log[h]) * softplus(a.data[r * a.cols + h] + dt[h]);
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const DeltaStep& o) {
    const Matrix &q = V(o.q), &k = V(o.k), &v = V(o.v), &beta = V(o.beta), &g = V(o.g);
    Matrix& out = V(o.out);
    const std::size_t dk = o.dk, dv = o.dv, group = o.value_heads / o.key_heads;
    for (std::size_t r = 0; r < q.rows; ++r) {
        auto& S = state(b, r, o.state);
        for (std::size_t h = 0; h < o.value_heads; ++h) {
            double* s = &S[h * dk * dv];
            const double* kk = &k.data[r * k.cols + (h / group) * dk];
            const double* qq = &q.data[r * q.cols + (h / group) * dk];
            const double* vv = &v.data[r * v.cols + h * dv];
            const double decay = std::exp(g.data[r * g.cols + h]);
            for (std::size_t i = 0; i < dk * dv; ++i)
                s[i] *= decay;
            for (std::size_t j = 0; j < dv; ++j) {
                double mem = 0;
                for (std::size_t i = 0; i < dk; ++i)
                    mem += s[i * dv + j] * kk[i];
                const double delta = beta.data[r * beta.cols + h] * (vv[j] - mem);
                for (std::size_t i = 0; i < dk; ++i)
                    s[i * dv + j] += kk[i] * delta;
            }
            for (std::size_t j = 0; j < dv; ++j) {
                double o2 = 0;
                for (std::size_t i = 0; i < dk; ++i)
                    o2 += s[i * dv + j] * qq[i];
                out.data[r * out.cols + h * dv + j] = o2;
            }
        }
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GatedRmsNorm& o) {
    const auto& w = constant(o.w);
    const Matrix x = V(o.x);
    const Matrix& z = V(o.z);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t g0 = 0; g0 < x.cols; g0 += o.group) {
            double ss = 0;
            for (std::size_t i = 0; i < o.group; ++i)
                ss += x.data[r * x.cols + g0 + i] * x.data[r * x.cols + g0 + i];
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(o.group) + o.eps);
            for (std::size_t i = 0; i < o.group; ++i) {
                const std::size_t at = r * x.cols + g0 + i;
                out.data[at] = w[i] * (x.data[at] * inv) * silu(z.data[at]);
            }
        }
}

} // namespace cardsim::models
