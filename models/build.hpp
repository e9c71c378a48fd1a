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

/// A built graph (a struct, so that what a builder knows beside the IR has a place to go).
struct BuiltGraph {
    graph::Graph graph;
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
