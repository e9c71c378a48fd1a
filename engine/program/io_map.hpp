#pragma once
// The io map: where the host writes a step's inputs and reads its outputs, as the program's host
// map describes them.

#include "engine/graph/graph.hpp"
#include "engine/graph/probe.hpp"
#include "engine/program/program.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
///
/// A program lowered with slots (`lower::Options::slots`) also has `slots`, u32 per token row: the
/// store sequence each row reads and writes; its stores hold `slot_count + 1` sequences, the last
/// (`pad_slot()`) for padding rows. Without slots, `slots` is empty and `slot_count` 0.
struct IoMap {
    Place ids, positions, seq_starts, qtype, marker_rows, marker_starts;
    Place slots;
    std::size_t slot_count = 0; ///< the slots the stores hold for sequences (the pad slot besides)
    std::vector<std::pair<graph::Val, Place>> outputs; ///< the graph's outputs, then the probes'
    std::vector<graph::Probe> probes; ///< the probes, read back as the last `probes.size()` outputs
    /// The slot padding rows name: past every sequence's, its store bytes read by no live row.
    std::size_t pad_slot() const { return slot_count; }
    /// How many of `outputs` are the graph's own.
    std::size_t graph_outputs() const { return outputs.size() - probes.size(); }
};

/// The io map a program's host map describes (values and probes as the graph indices it names).
IoMap io_map(const Host& host);

/// Why a step's `slots` input does not fit `m`, or nothing: a program with slots takes one per
/// token row (`m.slots` holds that many u32), each at most `m.pad_slot()`; one without takes none.
/// The sentence names the row and the slot (`row 3 names slot 9, and the stores hold slots 0 .. 4
/// (4 the pad slot)`).
std::optional<std::string> slots_refusal(const IoMap& m, std::span<const std::uint32_t> slots);

} // namespace cardsim::program
