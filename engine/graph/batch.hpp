#pragma once
// What a batch gives a graph besides its weights: the inputs of one step.

#include <cstdint>
#include <vector>

namespace cardsim::graph {

/// The inputs of one step of a graph, u32 each: token ids and each token row's position in its
/// sequence (token rows); the first token row of each sequence then the token count (`seq_starts`,
/// sequences + 1); each sequence's question type (`qtype`); each marker's token row
/// (`marker_rows`); the first marker of each sequence then the marker count (`marker_starts`).
/// A decoder step uses ids and positions; the encoder all of them. `slots` (token rows) names the
/// store sequence each row reads and writes, for a program lowered with slots
/// (`lower::Options::slots`): rows of one slot are consecutive and in position order (a prefill
/// chunk, or one decode row); empty otherwise (row r's sequence follows from its index).
/// `routing` is what a timing-only step takes instead of the data it lacks: per Moe op in graph
/// order, each token row's chosen experts (rows × top_k, from a routing model or a recorded
/// routing trace); a full step ignores it (its route commands choose).
struct BatchInputs {
    std::vector<std::uint32_t> ids, positions, seq_starts, qtype, marker_rows, marker_starts;
    std::vector<std::uint32_t> slots;
    std::vector<std::vector<std::uint32_t>> routing;
};

} // namespace cardsim::graph
