// The f64 evaluation of the feed-forward activations: SiLU·up, GELU, GeGLU, GELU·up
// (graph_eval_ops.hpp).

#include "models/graph_eval_ops.hpp"

namespace cardsim::models {

using namespace graph;
using namespace eval_math;

void GraphEvaluator::OpEval::eval(std::size_t, const SiluMul& o) {
    const Matrix gate = V(o.gate);
    const Matrix& up = V(o.up);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < gate.data.size(); ++i)
        out.data[i] = silu(gate.data[i]) * up.data[i];
}

void GraphEvaluator::OpEval::eval(std::size_t, const Gelu& o) {
    const Matrix x = V(o.x);
    for (std::size_t i = 0; i < x.data.size(); ++i)
        V(o.out).data[i] = gelu(x.data[i]);
}

void GraphEvaluator::OpEval::eval(std::size_t, const GeGlu& o) {
    const Matrix& x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < out.rows; ++r)
        for (std::size_t c = 0; c < out.cols; ++c)
            out.data[r * out.cols + c] = gelu(x.data[r * x.cols + c]) * x.data[r * x.cols + out.cols + c];
}

void GraphEvaluator::OpEval::eval(std::size_t, const GeluMul& o) {
    const Matrix gate = V(o.gate), up = V(o.up);
    Matrix& out = V(o.out);
    for (std::size_t i = 0; i < gate.data.size(); ++i)
        out.data[i] = (o.tanh ? gelu_tanh(gate.data[i]) : gelu(gate.data[i])) * up.data[i];
}

} // namespace cardsim::models
