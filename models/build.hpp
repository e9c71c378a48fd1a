#pragma once
// Graph builders: a recognised checkpoint in, the op graph of its forward pass out (one decode step
// for decoders, the whole batch for the encoder), every constant bound to a checkpoint tensor view.

#include "engine/graph/graph.hpp"
#include "models/checkpoint.hpp"
#include "models/spec.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::models {

/// What a `Moe` op means beyond the fields the graph IR gives it (models/README.md, "What the graph
/// IR leaves open"): Qwen3-Next scales its shared expert's output by `sigmoid(x · gᵀ)` with a
/// `[1, width]` gate, and may renormalise the top-k router probabilities.
struct MoeExtra {
    std::size_t op = 0;                         ///< the Moe op's index in `Graph::ops`
    std::optional<graph::W> shared_expert_gate; ///< `[1, width]`, when the shared expert is gated
    bool norm_topk_prob = true;                 ///< top-k probabilities divided by their sum
};

/// A built graph and what its Moe ops carry outside the IR.
struct BuiltGraph {
    graph::Graph graph;
    std::vector<MoeExtra> moe;
    /// The extra of Moe op `op`, or null.
    const MoeExtra* moe_extra(std::size_t op) const;
};

/// Checks that `checkpoint` holds every tensor `spec` needs with the shape it needs (a missing
/// tensor or a wrong shape is a cardsim::Error naming the file and tensor), then builds the graph.
/// A decoder's graph is one decode step for a bucket of sequences: token rows are sequences, each
/// row that sequence's next token at its position; outputs `logits` (vocab wide) and `next`. The
/// encoder's graph is the seed's: embeddings, question types, layers, markers, act head; outputs
/// `logits` (marker rows) and `act` (sequence rows, two wide). Every graph passes `graph::check`.
BuiltGraph build_graph(const Checkpoint& checkpoint, const ModelSpec& spec);

/// The tensors `spec` needs, looked up and shape-checked in `checkpoint`: name → index.
std::map<std::string, graph::W> bind_tensors(const Checkpoint& checkpoint, const ModelSpec& spec);

/// The decoder part of `build_graph`, over tensors bound by `bind_tensors`.
BuiltGraph build_decoder(const DecoderSpec& spec, const std::map<std::string, graph::W>& tensors);
/// The encoder part of `build_graph`, over tensors bound by `bind_tensors`.
BuiltGraph build_encoder(const EncoderSpec& spec, const std::map<std::string, graph::W>& tensors);

} // namespace cardsim::models
