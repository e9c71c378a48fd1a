// The f64 evaluation of the ops every family uses: matvecs, norms, elementwise (graph_eval_ops.hpp).

#include "models/graph_eval_ops.hpp"

#include "engine/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace cardsim::models {

using namespace graph;
using namespace eval_math;

void GraphEvaluator::OpEval::eval(std::size_t index, const graph::AllReduce&) {
    throw Error(fmt::format("op {} (AllReduce) is one card's share of a tensor-parallel model: the f64 "
                            "evaluator runs the whole model's graph",
                            index));
}

void GraphEvaluator::OpEval::eval(std::size_t index, const graph::AllGather&) {
    throw Error(fmt::format("op {} (AllGather) is one card's share of a tensor-parallel model: the f64 "
                            "evaluator runs the whole model's graph",
                            index));
}

void GraphEvaluator::OpEval::eval(std::size_t index, const Gemm& o) {
    if (o.partial)
        throw Error(fmt::format("op {} (a partial Gemm) is one card's share of a tensor-parallel model: the "
                                "f64 evaluator runs the whole model's graph",
                                index));
    const auto& w = constant(o.w);
    const graph::ViewShape vs = self.weights_.view_of(o.w.tensor, o.w.view);
    const bool t = std::visit([](auto& v) { return v.transpose; }, o.w.view);
    const std::size_t n = t ? vs.rows : vs.row_len, k = t ? vs.row_len : vs.rows;
    const std::vector<double>* bias = o.b ? &constant(*o.b) : nullptr;
    const Matrix a = V(o.a);
    Matrix& out = V(o.out);
    if (a.cols != k || out.cols != n)
        throw std::logic_error(
            fmt::format("op {}: a Gemm of [{}, {}] from {} to {} wide", index, n, k, a.cols, out.cols));
    for (std::size_t r = 0; r < a.rows; ++r)
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::size_t i = 0; i < k; ++i)
                s += a.data[r * k + i] * (t ? w[j * k + i] : w[i * n + j]);
            if (bias) s += (*bias)[j];
            double& y = out.data[r * n + j];
            switch (o.epilogue) {
            case Epilogue::None:
                y = s;
                break;
            case Epilogue::Gelu:
                y = gelu(s);
                break;
            case Epilogue::Relu:
                y = std::max(0.0, s);
                break;
            case Epilogue::Accumulate:
                y += s;
                break;
            }
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const LayerNorm& o) {
    const auto& w = constant(o.w);
    const std::vector<double>* bias = o.b ? &constant(*o.b) : nullptr;
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto row = x.row(r);
        const double n = static_cast<double>(row.size());
        const double mean = std::accumulate(row.begin(), row.end(), 0.0) / n;
        double var = 0;
        for (double v : row)
            var += (v - mean) * (v - mean);
        var /= n;
        const double inv = 1.0 / std::sqrt(var + o.eps);
        for (std::size_t c = 0; c < row.size(); ++c)
            out.data[r * out.cols + c] = (row[c] - mean) * inv * w[c] + (bias ? (*bias)[c] : 0.0);
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const RmsNorm& o) {
    const std::vector<double>* w = o.w ? &constant(*o.w) : nullptr;
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r)
        for (std::size_t g0 = 0; g0 < x.cols; g0 += o.group) {
            double ss = 0;
            for (std::size_t i = 0; i < o.group; ++i)
                ss += x.data[r * x.cols + g0 + i] * x.data[r * x.cols + g0 + i];
            const double inv = 1.0 / std::sqrt(ss / static_cast<double>(o.group) + o.eps);
            for (std::size_t i = 0; i < o.group; ++i) {
                const double scale = !w ? 1.0 : o.zero_centred ? 1.0 + (*w)[i] : (*w)[i];
                out.data[r * x.cols + g0 + i] = x.data[r * x.cols + g0 + i] * inv * scale;
            }
        }
}

void GraphEvaluator::OpEval::eval(std::size_t, const Add& o) {
    const Matrix a = V(o.a);
    const Matrix& bb = V(o.b);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < a.data.size(); ++i)
        out.data[i] = a.data[i] + bb.data[i];
}

void GraphEvaluator::OpEval::eval(std::size_t, const Silu& o) {
    const Matrix x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        out.data[i] = silu(x.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const SigmoidGate& o) {
    const Matrix x = V(o.x);
    const Matrix& gate = V(o.gate);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        out.data[i] = x.data[i] * sigmoid(gate.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const Relu& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = std::max(0.0, x.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const Scale& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = x.data[i] * o.factor;
}

void GraphEvaluator::OpEval::eval(std::size_t, const Softcap& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = o.cap * std::tanh(x.data[i] / o.cap);
}

} // namespace cardsim::models
