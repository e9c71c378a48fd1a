#pragma once
// The io map: where the host writes a step's inputs and reads its outputs, as the program's host
// map describes them.

#include "engine/graph/graph.hpp"
#include "engine/graph/probe.hpp"
#include "engine/program/program.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace cardsim::program {

/// Bytes of a region.
struct Place {
    Region region = Region::None;
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

/// The io map a program's host map describes (values and probes as the graph indices it names).
IoMap io_map(const Host& host);

} // namespace cardsim::program
