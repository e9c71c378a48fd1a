#pragma once
// A trace of a simulated run: the records the card produced, in the format of FORMAT.md.

#include "engine/card/card_config.hpp"
#include "engine/program/program.hpp"
#include "sim/card/simulation.hpp"
#include "traces/trace.hpp"

namespace cardsim::traces {

/// The trace of `run` of `program` on `config`: header (program digest, config digest from the
/// program header, knob point, mode, clock, DDR channels, producer meta, the config keys that
/// differ from the default card, and `prefill_steps` when given), then one record per executed
/// command, indexed step × commands + command (`pc` the command), with per-channel DDR bytes, the
/// digest (full runs) and data lines when the run kept data.
Trace trace_of(const sim::RunResult& run, const program::Program& program, const card::CardConfig& config,
               sim::Mode mode, std::optional<std::size_t> prefill_steps = std::nullopt);

} // namespace cardsim::traces
