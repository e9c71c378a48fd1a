#pragma once
// Lowering: an accepted graph, for one bucket, into a command stream and a DDR image.

#include "engine/graph/graph.hpp"
#include "engine/graph/layout.hpp"
#include "engine/graph/probe.hpp"
#include "engine/graph/weight_source.hpp"
#include "engine/lower/image.hpp"
#include "engine/lower/target.hpp"
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
/// for `marker_rows` (the token row of each marker); what the host reads back after the step as f32
/// rows: each graph output, then each probe.
struct IoMap {
    Place ids, positions, seq_starts, qtype, marker_rows, marker_starts;
    std::vector<std::pair<graph::Val, Place>> outputs; ///< the graph's outputs, then the probes'
    std::vector<graph::Probe> probes; ///< the probes, read back as the last `probes.size()` outputs
    /// How many of `outputs` are the graph's own.
    std::size_t graph_outputs() const { return outputs.size() - probes.size(); }
};

/// A lowered program with everything a host needs to run it and check it (a program read from
/// its files, `loaded`, has no layout, states or `op_of`).
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

/// The io map a program's host map describes (values and probes as the graph indices it names).
IoMap io_map(const program::Host& host);

/// A program and its image as read from their files, with the io map and options of its host map.
/// Throws cardsim::Error naming both files when the image's digest is not the one the program names.
Compiled loaded(program::Program program, Image image, const std::string& program_file,
                const std::string& image_file);

} // namespace cardsim::lower
