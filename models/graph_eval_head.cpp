// The f64 evaluation of the embedding, the arg-max and the encoder's heads (graph_eval_ops.hpp).

#include "models/graph_eval_ops.hpp"

#include "engine/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cardsim::models {

using namespace graph;
using namespace eval_math;

void GraphEvaluator::OpEval::eval(std::size_t, const Embed& o) {
    const auto& t = constant(o.table);
    Matrix& out = V(o.out);
    const std::size_t vocab = t.size() / out.cols;
    for (std::size_t r = 0; r < out.rows; ++r) {
        const auto id = b.tokens[r];
        if (id < 0 || static_cast<std::size_t>(id) >= vocab)
            throw Error(fmt::format("token {} is outside the vocabulary of {}", id, vocab));
        std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(id) * out.cols),
                    out.cols, out.data.begin() + static_cast<std::ptrdiff_t>(r * out.cols));
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const ArgMax& o) {
    const Matrix& x = V(o.x);
    Matrix& out = V(o.out);
    for (std::size_t r = 0; r < x.rows; ++r) {
        auto row = x.row(r);
        out.data[r] = static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin());
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const AddType& o) {
    const auto& t = constant(o.table);
    Matrix& h = V(o.h);
    const std::size_t types = t.size() / h.cols;
    for (std::size_t r = 0; r < h.rows; ++r) {
        const std::size_t q = b.qtype.at(b.token_seq[r]);
        if (q >= types) throw Error(fmt::format("question type {} is outside the table of {}", q, types));
        for (std::size_t c = 0; c < h.cols; ++c)
            h.data[r * h.cols + c] += t[q * h.cols + c];
    }
}

void GraphEvaluator::OpEval::eval(std::size_t, const GatherMarkers& o) {
    const Matrix& h = V(o.h);
    Matrix& out = V(o.out);
    for (std::size_t m = 0; m < out.rows; ++m)
        std::copy_n(h.row(b.marker_row[m]).begin(), h.cols,
                    out.data.begin() + static_cast<std::ptrdiff_t>(m * out.cols));
}

void GraphEvaluator::OpEval::eval(std::size_t, const ActFeatures& o) {
    const Matrix& h = V(o.h);
    const Matrix& l = V(o.logits);
    Matrix& out = V(o.out);
    for (std::size_t s = 0; s < out.rows; ++s) {
        std::vector<double> p;
        for (std::size_t m = 0; m < l.rows; ++m)
            if (b.marker_seq[m] == s) p.push_back(l.data[m]);
        const std::size_t k = p.size();
        softmax(p);
        std::vector<double> sorted = p;
        std::sort(sorted.rbegin(), sorted.rend());
        const double top1 = k > 0 ? sorted[0] : 0.0, top2 = k > 1 ? sorted[1] : 0.0;
        double entropy = 0;
        for (double v : p)
            if (v > 0) entropy -= v * std::log(v);
        double* row = &out.data[s * out.cols];
        std::copy_n(h.row(b.first_row[s]).begin(), h.cols, row);
        row[h.cols] = top1;
        row[h.cols + 1] = top1 - top2;
        row[h.cols + 2] = k > 1 ? entropy / std::log(static_cast<double>(k)) : 0.0;
        row[h.cols + 3] = static_cast<double>(k) / 255.0;
    }
}

} // namespace cardsim::models
