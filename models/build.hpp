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

/// One card's share of a tensor-parallel plan: card `card` of `cards`, joining the row-parallel
/// matvecs' parts by `exchange`; a split of a matrix's columns must fall on multiples of `align`
/// (the weights' scale block, so that each card's blocks are the one card's).
/// With `experts` (expert parallel), each Moe layer's experts are split by index instead: card c
/// holds experts c·E/N .. (c + 1)·E/N − 1 and layer i's shared expert runs on card i mod N; every
/// card routes every row, and the cards' combines are joined like a row-parallel projection.
struct Shard {
    std::size_t card = 0, cards = 1;
    graph::Exchange exchange = graph::Exchange::Exact;
    std::size_t align = 32;
    bool experts = false;
};

/// The decoder part of `build_graph`, over tensors bound by `bind_tensors`.
BuiltGraph build_decoder(const DecoderSpec& spec, const std::map<std::string, graph::W>& tensors);

/// Card `shard.card`'s graph of a decoder split Megatron-style over `shard.cards` cards: each
/// attention layer's query, key and value heads and each MLP's intermediate columns split by card
/// (column parallel: row ranges of q, k, v, gate and up), the output and down projections over the
/// card's columns (row parallel: partial Gemms) joined by an AllReduce, one a block; the embedding
/// and every norm on every card; the LM head's vocabulary split by card and joined by an AllGather.
/// What no split can keep exact is a cardsim::Refusal naming it: experts (unless `shard.experts`
/// splits them by index; then a model without experts, or experts the cards do not divide), latent
/// attention layers, biases on the row-parallel projections, and heads, intermediate columns or a
/// vocabulary the cards do not divide (columns in whole scale blocks).
BuiltGraph build_decoder_shard(const DecoderSpec& spec, const std::map<std::string, graph::W>& tensors,
                               const Shard& shard);

/// `build_graph`'s tensor-parallel form: card `shard.card`'s graph (build_decoder_shard); an
/// encoder is a cardsim::Error.
BuiltGraph build_shard(const Checkpoint& checkpoint, const ModelSpec& spec, const Shard& shard);

/// Why a model of `spec` cannot be split by heads and columns over cards (`--plan tp`, `ep` and
/// their products with pp: build_shard refuses it), or nothing: `check` and `run` say the same.
std::optional<std::string> shard_refusal(const ModelSpec& spec);
/// The encoder part of `build_graph`, over tensors bound by `bind_tensors`.
BuiltGraph build_encoder(const EncoderSpec& spec, const std::map<std::string, graph::W>& tensors);

} // namespace cardsim::models
