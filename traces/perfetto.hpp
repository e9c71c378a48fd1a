#pragma once
// The Perfetto / Chrome trace-event JSON view of a trace: a track per unit, a slice per command,
// DDR bandwidth and queue depth as counter tracks.

#include "traces/trace.hpp"

#include <boost/json.hpp>

#include <filesystem>
#include <string>

namespace cardsim::traces {

/// The Chrome trace-event document of `trace` (opens in ui.perfetto.dev and chrome://tracing).
/// Times are microseconds, cycles / clock_mhz. One process (the card); one thread track per unit
/// (a unit whose commands overlap gets further lanes, `unit #2`, ..., so slices never cross); one
/// complete (`X`) slice per command named by its opcode, with the record's fields as args (with
/// a split: `ready_cycle`, `bound_by` the largest part, and `split.PART` for every part). A
/// counter `DDR bandwidth` gives GB/s over time: each command's bytes spread evenly over
/// [start, end) (a zero-length command over one cycle), taken from its ddr fields when every
/// command has them, otherwise from read + written; with ddr fields, one counter per channel
/// gives read and write GB/s, and a counter `DDR channel N queue depth` the commands with traffic
/// on the channel in flight (between their start and end). Rates are rounded to 1e-6 GB/s (1 kB/s).
/// `otherData` holds the header's facts and, under `meta`, every meta value as it is (escaped as
/// the trace file spells it only when it holds a byte other than printable ASCII, tab and LF).
/// A system trace (version 3): a process per card (pid K + 1, named `cardsim card K (program ...)`)
/// holding what one card's document holds of that card's commands, and a process `links` (pid
/// cards + 1) with a track per link (`link 0 -> 1 (2 ports)`) and a `message` slice per message
/// over its wire interval (args: from, to, bytes, start_cycle, end_cycle).
/// The same trace always gives the same document.
boost::json::object perfetto_json(const Trace& trace);

/// `perfetto_json(trace)` serialised.
std::string to_perfetto(const Trace& trace);

/// Writes `to_perfetto(trace)` to `destination` atomically.
void write_perfetto(const std::filesystem::path& destination, const Trace& trace);

} // namespace cardsim::traces
