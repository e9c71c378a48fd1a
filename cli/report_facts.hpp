#pragma once
// The facts of a run that its report page shows and its trace records (traces/report/run_facts.hpp),
// taken from what `cardsim run` knows: its report, the card config and the model's graph.

#include "cli/pipeline.hpp"
#include "engine/card/card_config.hpp"
#include "engine/graph/graph.hpp"
#include "engine/program/program.hpp"
#include "engine/shim/check.hpp"
#include "traces/report/run_facts.hpp"

namespace cardsim::cli {

/// The shim's answers for `g` as the page's verdict table: groups with the same part, answer,
/// class, ops and commands are one row over the layers they occur in (first occurrence order);
/// merges not made and refusals once each, with a count; the verdict as `cardsim check` ends.
traces::report::Verdicts verdicts(const graph::Graph& g, const shim::Report& report);

/// `5` / `0-23` / `0, 2, 4-6`: layer indices (increasing) as ranges.
std::string layer_ranges(const std::vector<std::size_t>& layers);

/// The host's phases of `report` up to its outputs (the page is one of them).
traces::report::HostFacts host_facts(const RunReport& report);

/// The facts of `report`, run on `config`; the verdicts when the run has the model's graph `g`.
/// Host times are included (a page made by the run shows them; a trace never records them).
traces::report::RunFacts run_facts(const RunReport& report, const card::CardConfig& config,
                                   const graph::Graph* g);

/// Every command of `program` as `cardsim disasm` prints it, by pc (the tooltips' operands).
std::vector<std::string> program_text(const program::Program& program);

} // namespace cardsim::cli
