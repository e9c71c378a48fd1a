#include "models/graph_eval.hpp"

#include "models/graph_eval_ops.hpp"

#include "engine/error.hpp"
#include "engine/overload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cardsim::models {

using namespace graph;

GraphEvaluator::GraphEvaluator(const BuiltGraph& graph, const graph::WeightSource& weights)
    : graph_(graph), weights_(weights) {}

const std::vector<double>& GraphEvaluator::constant(const Weight& w) {
    auto key = std::make_pair(w.tensor, describe(w.view));
    auto it = constants_.find(key);
    if (it == constants_.end()) {
        std::vector<double> v(weights_.view_of(w.tensor, w.view).numel());
        weights_.read_f64(w.tensor, w.view, v);
        it = constants_.emplace(key, std::move(v)).first;
    }
    return it->second;
}

std::vector<double>& GraphEvaluator::state(const Batch& b, std::size_t token_row, StateId s) {
    return seqs_[b.seq_ids.at(b.token_seq.at(token_row))].states.at(s.id);
}

std::size_t GraphEvaluator::length(std::size_t seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.length;
}

void GraphEvaluator::forget(std::size_t seq) {
    seqs_.erase(seq);
}

GraphEvaluator::Step GraphEvaluator::step(std::span<const DecodeRow> rows) {
    Batch b;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        if (std::count_if(rows.begin(), rows.end(), [&](auto& o) { return o.seq == r.seq; }) > 1)
            throw Error(fmt::format("a decode step feeds sequence {} twice", r.seq));
        auto& s = seqs_[r.seq];
        if (s.states.empty()) {
            for (const auto& st : graph_.graph.states)
                s.states.push_back(std::visit(
                    Overload{
                        [](const ConvWindow& w) {
                            return std::vector<double>((w.kernel - 1) * w.channels, 0.0);
                        },
                        [](const DeltaState& d) { return std::vector<double>(d.heads * d.dk * d.dv, 0.0); },
                        [](const auto&) { return std::vector<double>{}; },
                    },
                    st));
        }
        b.tokens.push_back(r.token);
        b.token_seq.push_back(i);
        b.position.push_back(s.length);
        b.seq_ids.push_back(r.seq);
        b.first_row.push_back(i);
        b.qtype.push_back(0);
    }
    run(b);
    for (const auto& r : rows)
        ++seqs_[r.seq].length;
    Step out;
    if (graph_.graph.logits) out.logits = vals_[graph_.graph.logits->id];
    if (graph_.graph.next)
        for (double v : vals_[graph_.graph.next->id].data)
            out.next.push_back(static_cast<std::int64_t>(v));
    return out;
}

GraphEvaluator::Encoded GraphEvaluator::encode(std::span<const EncoderSequence> batch) {
    Batch b;
    for (std::size_t s = 0; s < batch.size(); ++s) {
        b.first_row.push_back(b.tokens.size());
        b.qtype.push_back(batch[s].question_type);
        b.seq_ids.push_back(s);
        for (auto m : batch[s].markers) {
            if (m >= batch[s].tokens.size())
                throw Error(fmt::format("sequence {}: marker at position {} past its {} tokens", s, m,
                                        batch[s].tokens.size()));
            b.marker_row.push_back(b.tokens.size() + m);
            b.marker_seq.push_back(s);
        }
        for (std::size_t p = 0; p < batch[s].tokens.size(); ++p) {
            b.tokens.push_back(batch[s].tokens[p]);
            b.token_seq.push_back(s);
            b.position.push_back(p);
        }
    }
    seqs_.clear();
    run(b);
    seqs_.clear();
    Encoded out;
    if (graph_.graph.logits) out.marker_logits = vals_[graph_.graph.logits->id];
    if (graph_.graph.act) out.act = vals_[graph_.graph.act->id];
    return out;
}

void GraphEvaluator::run(const Batch& b) {
    const Graph& g = graph_.graph;
    const Bucket bucket{b.tokens.size(), b.seq_ids.size(), b.marker_row.size()};
    vals_.assign(g.vals.size(), Matrix{});
    for (std::size_t v = 0; v < g.vals.size(); ++v) {
        vals_[v].rows = bucket.rows(g.vals[v].rows);
        vals_[v].cols = g.vals[v].width;
        vals_[v].data.assign(vals_[v].rows * vals_[v].cols, 0.0);
    }
    OpEval ops{*this, b};
    for (std::size_t index = 0; index < g.ops.size(); ++index)
        std::visit([&](const auto& o) { ops.eval(index, o); }, g.ops[index]);
}

} // namespace cardsim::models
