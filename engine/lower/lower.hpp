#pragma once
// Lowering: an accepted graph, for one bucket, into a command stream and a DDR image.

#include "engine/graph/graph.hpp"
#include "engine/graph/layout.hpp"
#include "engine/graph/probe.hpp"
#include "engine/graph/weight_source.hpp"
#include "engine/lower/capacity.hpp"
#include "engine/lower/target.hpp"
#include "engine/program/loaded.hpp"
#include "engine/program/program.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cardsim::lower {

/// What a lowering is for: the row counts and the longest sequence the caches hold; the values to
/// observe inside the step besides the graph's outputs; and what the host map records of the
/// checkpoint (neither changes a command).
struct Options {
    Options() = default;
    /// The row counts and the cache length, observing nothing.
    Options(graph::Bucket b, std::size_t positions = 256) : bucket(b), max_positions(positions) {}

    graph::Bucket bucket;
    std::size_t max_positions = 256;
    /// Each is copied to the io region right after the command of its op (without probes the
    /// lowering is the same as it ever was).
    std::vector<graph::Probe> probes;
    std::string model;                   ///< the recognised architecture
    std::uint64_t checkpoint_digest = 0; ///< the checkpoint's digest
    /// Places every weight by its shape and format without reading or packing it: the image holds
    /// no chunks, and the program is for timing-only runs (its commands are the same as with weights).
    bool shapes_only = false;
    /// Slot-addressed stores: every cache, state and convolution window is laid out for `slots`
    /// sequences plus one pad slot (index `slots`, which padding rows name) whatever the bucket,
    /// and the io map gains `slots` (u32 per token row) that each stateful command takes: row r
    /// reads and writes store sequence `slots[r]` at `positions[r]`. The bucket is then any mix
    /// of (slot, position) rows, those of one slot consecutive and in position order. Unset: each
    /// sequence of the bucket has its store (row r's follows from its index), as before.
    std::optional<std::size_t> slots;
};

/// A lowered program: what the card runs and its host drives (`program::Loaded`, all a program
/// read from its files has), and what lowering knows besides.
struct Compiled : program::Loaded {
    graph::Layout layout;               ///< arena offsets of the values, f32 elements
    std::vector<program::Place> states; ///< per graph state: its bytes for all sequences
    std::vector<std::size_t> op_of;     ///< per command: the first graph op it runs (outputs' copies: none)
    Options options;
    Capacity capacity; ///< what the program takes of the card's DDR
};

/// Lowers `g` for `target`: fuses its ops into classes, refuses (cardsim::Error listing every
/// refusal) what the card cannot run, lays the activations out in the arena, places weights
/// (packed, tile-major by the packer, each matrix starting on a stripe), caches, states, io and
/// the program in DDR, emits one command per Native class and per op otherwise, copies the graph's
/// outputs to the io region, and sets the dependencies. Deterministic: the same inputs give the
/// same bytes. A program that does not fit the card's DDR is refused (cardsim::Error with
/// `Capacity::refusal`) before any weight is read.
Compiled lower(const graph::Graph& g, const graph::WeightSource& weights, const Target& target,
               const Options& options);

/// Why the card cannot hold `g`'s arena for bucket `b` (its SRAM holds `sram_bytes`, the config's
/// `sram.bytes`), or nothing: the sentence `check` prints and lowering throws.
std::optional<std::string> arena_refusal(const graph::Graph& g, const graph::Bucket& b,
                                         std::uint64_t sram_bytes);

/// What lowering `g` for `target` with `options` takes of the card's DDR, whether or not it fits:
/// the lowering's own placement, shapes only (no weight is read or packed).
Capacity capacity(const graph::Graph& g, const graph::WeightSource& weights, const Target& target,
                  Options options);

} // namespace cardsim::lower
