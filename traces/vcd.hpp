#pragma once
// The VCD (IEEE 1364 value change dump) view of a trace: each unit's busy signal and each DDR
// channel's activity over time, for GTKWave and other waveform viewers.

#include "traces/trace.hpp"

#include <filesystem>
#include <string>

namespace cardsim::traces {

/// The VCD of `trace`, made from its records alone (the same trace always gives the same bytes).
/// Header: `$version`, `$timescale 1ps`, then a scope `card` holding one scope per unit, in order
/// of first appearance, with `$var wire 1 ID busy` (1 while at least one of the unit's commands is
/// in [start, end): the union of its records' intervals; a command of no cycles does not show)
/// and, when the unit's commands overlap somewhere (several instances), `$var integer 32 ID
/// commands` (how many are in flight); and, when the header has ddr_channels and every record its
/// `ddr` field, a scope `ddr` with one scope `channelN` per channel holding `$var integer 32 ID
/// active` (the commands with traffic on the channel in flight, as the Perfetto queue depth counts
/// them). Then `$dumpvars` with every variable at 0 at time 0, and the value changes in time
/// order, one `#T` per time that changes something, T = cycle × 10^6 / clock_mhz picoseconds
/// rounded to the nearest; the last time is the trace's last end cycle. Lines end in LF. A system
/// trace: the scope of each card is `cardK` (its units and DDR channels as above), and a scope
/// `links` holds per link a scope `linkFROMtoTO` with a `busy` wire (its messages on the wire).
std::string to_vcd(const Trace& trace);

/// Writes `to_vcd(trace)` to `destination` atomically.
void write_vcd(const std::filesystem::path& destination, const Trace& trace);

} // namespace cardsim::traces
