#pragma once
// The report page of one run: what ran (model, card, numerics contract), the figures `cardsim run`
// prints, a zoomable per-unit command timeline, unit occupancy and DDR bandwidth over time, the
// shim's verdicts and the layer checks; one self-contained HTML file.

#include "traces/report/run_facts.hpp"
#include "traces/trace.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::traces::report {

/// What a run page is made of: the trace, the run's facts when known (`recorded(trace.header)`,
/// or the run's own when the page is made by `cardsim run`), the name of the trace's source, and
/// the program's commands as text by pc (`program::disassemble`), when the program is known.
struct RunPageInput {
    const Trace& trace;
    std::optional<RunFacts> facts{};
    std::string source{};
    std::vector<std::string> operands{};
};

/// The run's figures as `cardsim run` prints them, one (label, text) per line of its summary, in
/// its order; with no facts, what the trace alone gives (cycles, time, DDR bytes and bandwidth).
std::vector<std::pair<std::string, std::string>> summary_lines(const RunPageInput& input);

/// The page as HTML text.
std::string run_page(const RunPageInput& input);

/// Writes `run_page(input)` to `destination` atomically.
void write_run_page(const std::filesystem::path& destination, const RunPageInput& input);

} // namespace cardsim::traces::report
