#pragma once
// The per-command table of a trace as CSV.

#include "traces/trace.hpp"

#include <filesystem>
#include <string>

namespace cardsim::traces {

/// The CSV of `trace`: a header row, then one row per record in index order with the columns
/// index, unit, opcode, start, end, duration, read, written, digest, pc and, when the header has
/// ddr_channels, ddr<C>_read and ddr<C>_written per channel. Absent values are empty cells. No
/// cell needs quoting (names and numbers only). Lines end in LF. A system trace's rows lead with a
/// `card` column.
std::string to_csv(const Trace& trace);

/// Writes `to_csv(trace)` to `destination` atomically.
void write_csv(const std::filesystem::path& destination, const Trace& trace);

} // namespace cardsim::traces
