#pragma once
// Lowering: an accepted graph, for one bucket, into a command stream and a DDR image.

#include "engine/graph/graph.hpp"
#include "engine/graph/layout.hpp"
#include "engine/graph/probe.hpp"
#include "engine/graph/weight_source.hpp"
#include "engine/lower/capacity.hpp"
#include "engine/lower/pack_cache.hpp"
#include "engine/lower/stage.hpp"
#include "engine/lower/target.hpp"
#include "engine/program/image_file.hpp"
#include "engine/program/loaded.hpp"
#include "engine/program/program.hpp"

#include <functional>
#include <memory>

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::lower {

/// What a lowering is for: the row counts and the longest sequence the caches hold; the values to
/// observe inside the step besides the graph's outputs; and what the host map records of the
/// checkpoint (neither changes a command).
struct Options {
    /// The most positions a cache may hold (2^31: no cache size wraps, and a program's dims hold it).
    static constexpr std::size_t max_positions_limit = std::size_t{1} << 31;
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
    /// One card's part of a plan over several cards (lower/plan.hpp): only its ops, weights and
    /// stores, its receives first and its sends last, the outputs copied on the last card only.
    /// Unset: the whole graph on one card, as before.
    std::optional<Stage> stage;
    /// The pack cache directory (lower/pack_cache.hpp; empty: none). With a checkpoint digest set,
    /// the packed weights come from its entry when it holds them all, and are written to it after
    /// packing otherwise. The bytes are the same either way.
    std::filesystem::path pack_cache;
    /// The most bytes the pack cache's entries may take: after writing an entry, the least recently
    /// used others are removed until they fit (lower/pack_cache.hpp).
    std::uint64_t pack_cache_limit = default_pack_cache_limit;
    /// Where the packed weights go: given the card whose image it is (`stage`'s, 0 for one card),
    /// the image file being written (program::ImageFile), or null. Lowering opens it for the
    /// image's chunks and writes each packed piece into it from small buffers, so the weights are
    /// never held whole in host memory; the image's chunks are then ranges of the file
    /// (ImageFile::memory). Unset, null or not opened: fresh host memory
    /// (program::ImageMemory::create). `cardsim compile` gives its files, one a card.
    std::function<program::ImageFile*(std::size_t card)> image_file;
};

/// A lowered program: what the card runs and its host drives (`program::Loaded`, all a program
/// read from its files has), and what lowering knows besides.
struct Compiled : program::Loaded {
    graph::Layout layout;               ///< arena offsets of the values, f32 elements
    std::vector<program::Place> states; ///< per graph state: its bytes for all sequences
    std::vector<std::size_t> op_of;     ///< per command: the first graph op it runs (outputs' copies: none)
    Options options;
    Capacity capacity;              ///< what the program takes of the card's DDR
    bool packed_from_cache = false; ///< the weights came from the pack cache
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

/// Lowers `g` for each of `buckets` with `options`' slots (required: cardsim::Error without) into
/// programs that share one region table for the weights and the stores: the same weights, caches
/// and state regions (same bases, same bytes) and the same DDR image (the weights packed once, held
/// by the first bucket alone: the others carry its digest and no copy of its bytes),
/// the io region and the arena sized for the largest bucket (each bucket's io places inside it
/// from its start), and one program area after the io where bucket k's commands follow those of
/// buckets 0 .. k-1 (each program's own program region is its part). `sim::simulate` over a set
/// refuses programs whose shared regions differ. `options.bucket` is ignored.
std::vector<Compiled> lower_set(const graph::Graph& g, const graph::WeightSource& weights,
                                const Target& target, const Options& options,
                                std::span<const graph::Bucket> buckets);

/// How many slots a card holds for a graph: what one slot's stores take (`per_slot`: every
/// cache, state and window of one sequence for `max_positions` (under a plan, `options.stage`'s
/// own), each part rounded up to a line as
/// lowering lays it out), the DDR left for slots (`free`: the card's DDR less the weights, the io
/// and program regions of the set of `buckets`, the pad slot, and a stripe for the rounding of
/// each of the two store regions), and `slots = floor(free / per_slot)`: a lowering (or set) with
/// that many slots fits the card.
struct SlotCapacity {
    std::uint64_t per_slot = 0, free = 0, slots = 0;
};
SlotCapacity slot_capacity(const graph::Graph& g, const graph::WeightSource& weights, const Target& target,
                           const Options& options, std::span<const graph::Bucket> buckets);

} // namespace cardsim::lower
