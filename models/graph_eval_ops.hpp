#pragma once
// The op evaluators of GraphEvaluator, private to models/: one overload per op kind, defined by op
// family so that a new family adds a file rather than growing a shared one:
//   graph_eval.cpp            steps and batches, constants, states, the op loop
//   graph_eval_common.cpp     ops every family uses: matvecs, norms, elementwise
//   graph_eval_attention.cpp  rotary, self attention, caches, latent attention
//   graph_eval_mixer.cpp      the Gated-DeltaNet mixer
//   graph_eval_ffn.cpp        the feed-forward activations
//   graph_eval_experts.cpp    mixtures of experts
//   graph_eval_head.cpp       embedding, arg-max and the encoder's heads

#include "models/graph_eval.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cardsim::models {

/// The functions of the ops' doc comments, in double.
namespace eval_math {

/// 1 / (1 + e^−x).
inline double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
/// x · sigmoid(x).
inline double silu(double x) {
    return x * sigmoid(x);
}
/// ln(1 + e^x), without overflow.
inline double softplus(double x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
/// The exact (erf) GELU.
inline double gelu(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
/// The tanh approximation of GELU (`gelu_pytorch_tanh`).
inline double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (x + 0.044715 * x * x * x)));
}

/// The rotation of `x[0 .. rd)` by position `pos`: pairs (i, i + rd/2) (NeoX) or (2i, 2i + 1)
/// (`interleaved`) at angle pos · theta^(−2i/rd).
inline void rotate(double* x, std::size_t rd, std::size_t pos, double theta, bool interleaved = false) {
    const std::size_t half = rd / 2;
    for (std::size_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(i) / rd);
        const double c = std::cos(angle), s = std::sin(angle);
        const std::size_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
        const double a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = b * c + a * s;
    }
}

/// Softmax of `x` in place.
inline void softmax(std::vector<double>& x) {
    if (x.empty()) return;
    const double m = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (auto& v : x)
        sum += (v = std::exp(v - m));
    for (auto& v : x)
        v /= sum;
}

} // namespace eval_math

/// One op of a batch at a time: an `eval` overload per op, each that op's doc comment in double
/// (engine/graph/graph.hpp) over the values and the batch's sequence states.
struct GraphEvaluator::OpEval {
    GraphEvaluator& self;
    const Batch& b;

    /// The value `v` of this run.
    Matrix& V(graph::Val v) { return self.vals_.at(v.id); }
    /// The constant `w` in double (read once per evaluator).
    const std::vector<double>& constant(const graph::Weight& w) { return self.constant(w); }
    /// State `s` of the sequence of `token_row`.
    std::vector<double>& state(const Batch& batch, std::size_t token_row, graph::StateId s) {
        return self.state(batch, token_row, s);
    }

    // ---- ops every family uses (graph_eval_common.cpp) ----

    void eval(std::size_t index, const graph::Gemm& o);
    void eval(std::size_t index, const graph::LayerNorm& o);
    void eval(std::size_t index, const graph::RmsNorm& o);
    void eval(std::size_t index, const graph::Add& o);
    void eval(std::size_t index, const graph::Silu& o);
    void eval(std::size_t index, const graph::SigmoidGate& o);
    void eval(std::size_t index, const graph::Relu& o);
    void eval(std::size_t index, const graph::Scale& o);
    void eval(std::size_t index, const graph::Softcap& o);
    /// A tensor-parallel card's collectives: refused (a card's graph is one share of a model; the
    /// evaluator runs the whole model's graph).
    void eval(std::size_t index, const graph::AllReduce& o);
    void eval(std::size_t index, const graph::AllGather& o);

    // ---- attention (graph_eval_attention.cpp) ----

    void eval(std::size_t index, const graph::Rope& o);
    void eval(std::size_t index, const graph::Attention& o);
    void eval(std::size_t index, const graph::Rotate& o);
    void eval(std::size_t index, const graph::CacheAppend& o);
    void eval(std::size_t index, const graph::AttendCache& o);
    void eval(std::size_t index, const graph::HeadMatmul& o);
    void eval(std::size_t index, const graph::LatentAttendCache& o);

    // ---- the Gated-DeltaNet mixer (graph_eval_mixer.cpp) ----

    void eval(std::size_t index, const graph::Conv& o);
    void eval(std::size_t index, const graph::L2Norm& o);
    void eval(std::size_t index, const graph::GdnGates& o);
    void eval(std::size_t index, const graph::DeltaStep& o);
    void eval(std::size_t index, const graph::GatedRmsNorm& o);

    // ---- feed-forward (graph_eval_ffn.cpp) ----

    void eval(std::size_t index, const graph::SiluMul& o);
    void eval(std::size_t index, const graph::Gelu& o);
    void eval(std::size_t index, const graph::GeGlu& o);
    void eval(std::size_t index, const graph::GeluMul& o);

    // ---- experts (graph_eval_experts.cpp) ----

    void eval(std::size_t index, const graph::Moe& o);

    // ---- embedding and heads (graph_eval_head.cpp) ----

    void eval(std::size_t index, const graph::Embed& o);
    void eval(std::size_t index, const graph::ArgMax& o);
    void eval(std::size_t index, const graph::AddType& o);
    void eval(std::size_t index, const graph::GatherMarkers& o);
    void eval(std::size_t index, const graph::ActFeatures& o);
};

} // namespace cardsim::models
