#pragma once
// The time views of a run page: the per-command table the timeline script draws (every field the
// trace's CSV export has, so a field added to the trace shows in the tooltip without a change
// here), unit occupancy over time and DDR bandwidth over time, binned.

#include "traces/report/svg_chart.hpp"
#include "traces/trace.hpp"

#include <boost/json.hpp>

#include <span>
#include <string>

namespace cardsim::traces::report {

/// The commands as columns, one per column of `to_csv(trace)` in its order: `{"name": N,
/// "values": [...]}` with numbers where every cell is an unsigned integer (empty cells null), or
/// `{"name": N, "names": [...], "codes": [...]}` for text (each cell an index into `names`).
boost::json::array command_columns(const Trace& trace);

/// What the timeline script reads: the clock, the run's length in cycles, the columns, the
/// program's commands as text by pc (`operands`, empty when the program is not known) and the
/// cycles at which steps ended (may be empty).
boost::json::object timeline_data(const Trace& trace, std::span<const std::string> operands,
                                  std::span<const std::uint64_t> step_end);

/// The run's length: the latest end cycle (0 for no commands).
std::uint64_t run_cycles(const Trace& trace);

/// Unit occupancy over time: a strip per unit (first appearance order), `bins` cells over the run,
/// each shaded by the fraction of its cycles in which the unit had a command (overlapping
/// commands count once), with a tooltip per cell.
std::string occupancy_svg(const Trace& trace, int bins);

/// DDR bandwidth over time in GB/s, `bins` intervals: a line per channel (read + write) from the
/// commands' ddr fields, each command's bytes spread evenly over [start, end); from read +
/// written bytes (one line) when some command has no ddr field.
Chart bandwidth_chart(const Trace& trace, int bins);

} // namespace cardsim::traces::report
