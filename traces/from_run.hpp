#pragma once
// A trace of a simulated run: the records the card produced, in the format of FORMAT.md.

#include "engine/card/card_config.hpp"
#include "engine/program/loaded.hpp"
#include "engine/program/program.hpp"
#include "sim/card/simulation.hpp"
#include "sim/system/system.hpp"
#include "traces/trace.hpp"

namespace cardsim::traces {

/// The trace of `run` of `program` on `config`: header (program digest, config digest from the
/// program header, knob point, mode, clock, DDR channels, producer meta, the config keys that
/// differ from the default card, and `prefill_steps` when given), then one record per executed
/// command, indexed step × commands + command (`pc` the command), with per-channel DDR bytes, the
/// digest (full runs) and data lines when the run kept data.
Trace trace_of(const sim::RunResult& run, const program::Program& program, const card::CardConfig& config,
               sim::Mode mode, std::optional<std::size_t> prefill_steps = std::nullopt);

/// The trace of a system's run (format version 3) from `run`, the system's run as one
/// (sim::system::whole: every card's records, each carrying its card), its `links` and each card's
/// program: the header of the last card's program (the outputs') with `program` the system's digest
/// of the cards' programs (`card` lines) and the links; each card's records as a one-card trace's,
/// carrying their card, card 0 first; and each link's messages (those it kept: a run that keeps
/// records), their wire intervals in kernel cycles. Throws cardsim::Error for fewer than 2
/// programs or a record of a card without one.
Trace trace_of(const sim::RunResult& run, std::span<const sim::system::LinkTotals> links,
               std::span<const program::Loaded> programs, const card::CardConfig& config, sim::Mode mode,
               std::optional<std::size_t> prefill_steps = std::nullopt);

} // namespace cardsim::traces
