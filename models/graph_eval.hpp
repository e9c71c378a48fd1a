#pragma once
// The f64 evaluator of a graph: every op interpreted in double exactly as its doc comment in
// engine/graph/graph.hpp says, with per-sequence states kept in double. It checks the graph
// builders against the f64 reference (models/reference.hpp) and is the graph-level half of that
// comparison; it shares no code with the reference.

#include "engine/graph/weight_source.hpp"
#include "models/build.hpp"
#include "models/view_text.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace cardsim::models {

/// Rows of doubles, row-major.
struct Matrix {
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::vector<double> data;
    std::span<const double> row(std::size_t r) const { return std::span(data).subspan(r * cols, cols); }
    double at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

/// One row of a decoder step: the sequence (any id the caller chooses) and the token it feeds.
struct DecodeRow {
    std::size_t seq = 0;
    std::int64_t token = 0;
};

/// One sequence of an encoder batch: its tokens, its question type (a row of the table), and its
/// markers (positions in the sequence, in order).
struct EncoderSequence {
    std::vector<std::int64_t> tokens;
    std::size_t question_type = 0;
    std::vector<std::size_t> markers;
};

/// Evaluates one built graph over a weight source, in double.
class GraphEvaluator {
public:
    /// Keeps references to `graph` and `weights`, which must outlive the evaluator.
    GraphEvaluator(const BuiltGraph& graph, const graph::WeightSource& weights);

    /// The outputs of one decoder step.
    struct Step {
        Matrix logits;                  ///< a row per DecodeRow
        std::vector<std::int64_t> next; ///< the ArgMax of each row
    };
    /// Runs one decode step: each row is its sequence's next token, at the position after the
    /// tokens that sequence has fed so far. A sequence may appear once per step. Throws
    /// cardsim::Error on a token outside the vocabulary.
    Step step(std::span<const DecodeRow> rows);

    /// The outputs of one encoder batch.
    struct Encoded {
        Matrix marker_logits; ///< a row (one wide) per marker, sequences in order
        Matrix act;           ///< a row (two wide) per sequence
    };
    /// Runs the encoder graph over `batch`.
    Encoded encode(std::span<const EncoderSequence> batch);

    /// How many tokens sequence `seq` has fed.
    std::size_t length(std::size_t seq) const;
    /// Drops sequence `seq`'s states.
    void forget(std::size_t seq);

    /// The value `v` after the last run (for tests of single ops).
    const Matrix& value(graph::Val v) const { return vals_.at(v.id); }

private:
    struct Batch {
        std::vector<std::int64_t> tokens;    ///< per token row
        std::vector<std::size_t> token_seq;  ///< batch sequence of each token row
        std::vector<std::size_t> position;   ///< position of each token row in its sequence
        std::vector<std::size_t> seq_ids;    ///< persistent id of each batch sequence (decoders)
        std::vector<std::size_t> qtype;      ///< per batch sequence
        std::vector<std::size_t> marker_row; ///< token row of each marker
        std::vector<std::size_t> marker_seq; ///< batch sequence of each marker
        std::vector<std::size_t> first_row;  ///< first token row of each batch sequence
    };
    struct SeqState {
        std::size_t length = 0;
        std::vector<std::vector<double>> states; ///< indexed like Graph::states
    };
    struct OpEval; ///< evaluates one op: an overload per op kind (graph_eval.cpp)
    void run(const Batch& b);
    const std::vector<double>& constant(const graph::Weight& w);
    std::vector<double>& state(const Batch& b, std::size_t token_row, graph::StateId s);

    const BuiltGraph& graph_;
    const graph::WeightSource& weights_;
    std::map<std::pair<graph::W, std::string>, std::vector<double>> constants_;
    std::map<std::size_t, SeqState> seqs_;
    std::vector<Matrix> vals_;
};

} // namespace cardsim::models
