#pragma once
// Lowering: an accepted graph, for one bucket, into a command stream and a DDR image.

#include "engine/graph/graph.hpp"
#include "engine/graph/layout.hpp"
#include "engine/graph/weight_source.hpp"
#include "engine/lower/image.hpp"
#include "engine/lower/target.hpp"
#include "engine/program/program.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cardsim::lower {

/// What a lowering is for: the row counts and the longest sequence the caches hold.
struct Options {
    graph::Bucket bucket;
    std::size_t max_positions = 256;
};

/// Bytes of a region.
struct Place {
    program::Region region = program::Region::None;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    friend bool operator==(const Place&, const Place&) = default;
};

/// Where the host writes a step's inputs and reads its outputs, in the io region: u32 per row for
/// ids and positions (token rows), u32 per sequence + 1 for `seq_starts` / `marker_starts` (first
/// token / marker of each sequence, then the count), u32 per sequence for `qtype`, u32 per marker
/// for `marker_rows` (the token row of each marker); each graph output as f32 rows.
struct IoMap {
    Place ids, positions, seq_starts, qtype, marker_rows, marker_starts;
    std::vector<std::pair<graph::Val, Place>> outputs;
};

/// A lowered program with everything a host needs to run it and check it.
struct Compiled {
    program::Program program;
    Image image;
    graph::Layout layout; ///< arena offsets of the values, f32 elements
    IoMap io;
    std::vector<Place> states;      ///< per graph state: its bytes for all sequences
    std::vector<std::size_t> op_of; ///< per command: the first graph op it runs (outputs' copies: none)
    Options options;
};

/// Lowers `g` for `target`: fuses its ops into classes, refuses (cardsim::Error listing every
/// refusal) what the card cannot run, lays the activations out in the arena, places weights
/// (packed, tile-major by the packer, each matrix starting on a stripe), caches, states, io and
/// the program in DDR, emits one command per Native class and per op otherwise, copies the graph's
/// outputs to the io region, and sets the dependencies. Deterministic: the same inputs give the
/// same bytes.
Compiled lower(const graph::Graph& g, const graph::WeightSource& weights, const Target& target,
               const Options& options);

} // namespace cardsim::lower
