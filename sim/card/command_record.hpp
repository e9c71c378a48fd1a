#pragma once
// What the card did for one command: the raw material of traces and summaries.

#include "engine/program/opcode.hpp"
#include "sim/card/command_time.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cardsim::sim {

/// One executed command: which step and command, its unit, when it ran (kernel cycles from the
/// start of the run), what it moved, and the xxh64 (seed 0) of the bytes it wrote (its write
/// operands' bytes after it ran, concatenated in operand order; 0 in timing-only runs).
struct CommandRecord {
    std::uint32_t card = 0; ///< which card of a system ran it (0 on its own)
    std::uint32_t step = 0;
    std::uint32_t index = 0;
    program::Unit unit = program::Unit::Dma;
    std::uint32_t instance = 0; ///< which unit of its kind ran it
    program::Opcode opcode = program::Opcode::Copy;
    std::uint64_t start = 0;                    ///< cycle the unit began
    std::uint64_t end = 0;                      ///< cycle the unit finished (results written)
    std::uint64_t compute_cycles = 0;           ///< the unit's compute time alone
    std::uint64_t work = 0;                     ///< the unit's work for it (Unit::work)
    std::uint64_t measured_cycles = 0;          ///< full runs on a measuring unit (RTL): its cycles; else 0
    std::uint64_t bytes_read = 0;               ///< bytes the unit read (of a cache: the rows it attended)
    std::uint64_t bytes_written = 0;            ///< bytes of its write operands (what the digest covers)
    std::vector<std::uint64_t> channel_read;    ///< DDR bytes read per channel
    std::vector<std::uint64_t> channel_written; ///< DDR bytes written per channel
    std::uint64_t digest = 0;
    /// Where its time went from the cycle the command processor reached it to its end: the
    /// waits sum to start - ready, the other parts to end - start (TimeSplit).
    TimeSplit time;
    /// The bytes of each write operand after the command, in operand order, when the run keeps
    /// data (for trace data lines); empty otherwise.
    std::vector<std::vector<std::byte>> written;
};

} // namespace cardsim::sim
