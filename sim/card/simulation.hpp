#pragma once
// Running a lowered program on the simulated card for some steps: the host side of the card.

#include "engine/card/card_config.hpp"
#include "engine/graph/batch.hpp"
#include "engine/program/loaded.hpp"
#include "sim/card/bit_flip.hpp"
#include "sim/card/card.hpp"
#include "sim/card/command_record.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::sim {

/// What the host writes into the io region before a step (u32 each; see program::IoMap).
using StepInputs = graph::BatchInputs;

/// What the host reads back after a step: each graph output's bytes, in `IoMap::outputs` order.
struct StepOutputs {
    std::vector<std::vector<std::byte>> values;
};

/// What to run: how many steps, the inputs of each (from the previous step's outputs, if any),
/// the mode, and the implementation of each unit kind (none given: the C++ models,
/// `units::UnitSet::standard`).
struct RunPlan {
    std::size_t steps = 1;
    std::function<StepInputs(std::size_t step, const StepOutputs* previous)> inputs;
    /// Step t's inputs read step t − lag's outputs (`previous`; none for the first `lag` steps).
    /// On one card, and in a system with lag 1, steps run one after another. A system with a
    /// larger lag runs them overlapped (a pipeline's microbatches or a prompt's chunks): each card
    /// starts step t when it has finished step t − 1 and the host has step t's inputs, so card k
    /// may run step t while card k + 1 runs step t − 1.
    std::size_t lag = 1;
    Mode mode = Mode::Full;
    std::optional<units::UnitSet> units;
    bool keep_data = false;   ///< records carry the bytes each command wrote
    bool keep_records = true; ///< keep every command's record (a trace needs them); false: one record
                              ///< per unit kind with its commands' totals, host memory flat per step
    /// When set, sees every request the card's units send to the DDR, at the memory-clock edge it
    /// arrives (e.g. a memory::TraceExporter writing it as a trace).
    memory::RequestObserver* ddr_observer = nullptr;
    std::optional<BitFlip> flip; ///< a deliberate error in one command's output (full runs)
};

/// One step of an open-ended session: which bucket of the set runs, its inputs, and the simulated
/// second before which it may not start (a request not yet arrived: the host idles until then).
struct SessionStep {
    std::size_t bucket = 0;
    graph::BatchInputs inputs;
    double not_before_seconds = 0;
};

/// An open-ended run over a set of buckets: before each step the host asks `next` (the step's
/// index, the simulated seconds when the previous step ended, that step's outputs or none) for the
/// step to run; nothing ends the run. The other fields are RunPlan's. Outputs are kept for every
/// step when `keep_outputs` and the mode is Full, else only the last step's (host memory flat).
struct SessionPlan {
    std::function<std::optional<SessionStep>(std::size_t step, double now_seconds,
                                             const StepOutputs* previous)>
        next;
    /// A system's session in `lanes` > 1 lanes (a pipeline's microbatches, whose steps are in
    /// flight at once): in place of `next`, the host keeps up to `lanes` steps in flight, one a
    /// lane; when a lane is free it asks `next_in(lane, now)` for its step (none: the lane idles),
    /// and tells `lane_done(lane, end, outputs)` when the lane's step has ended on every card. With
    /// no step in flight and every lane idle, `idle_until()` says when to ask again (none: the
    /// session ends). Each card runs the steps in the order they were issued.
    std::size_t lanes = 1;
    std::function<std::optional<SessionStep>(std::size_t lane, double now_seconds)> next_in;
    std::function<void(std::size_t lane, double end_seconds, const StepOutputs& outputs)> lane_done;
    std::function<std::optional<double>()> idle_until;
    Mode mode = Mode::Full;
    std::optional<units::UnitSet> units;
    bool keep_data = false;
    bool keep_records = false;
    bool keep_outputs = true;
    memory::RequestObserver* ddr_observer = nullptr;
    std::optional<BitFlip> flip;
};

/// Totals of one DDR channel over the run.
struct ChannelTotals {
    std::uint64_t read_bytes = 0, write_bytes = 0, row_hits = 0, row_misses = 0, row_conflicts = 0;
    double refresh_seconds = 0;
};

/// What a run produced.
/// One unit kind's commands in a run: how many completed, and their time splits summed.
struct KindTotals {
    std::uint64_t commands = 0;
    TimeSplit time{};
};

struct RunResult {
    std::vector<CommandRecord> records;    ///< sorted by step, then command index (RunPlan::keep_records)
    std::vector<StepOutputs> outputs;      ///< per step
    std::vector<std::uint64_t> step_end;   ///< the kernel cycle each step ended
    std::vector<std::uint64_t> step_start; ///< the kernel cycle each step started (after any idling)
    std::vector<std::size_t> step_bucket;  ///< the bucket each step ran (0 for a RunPlan)
    /// Per step of a model with experts (none without): each router's routing (rows × top_k chosen
    /// experts per Moe op, graph order), as the full run's routes chose or the timing-only run was given.
    std::vector<std::vector<std::vector<std::uint32_t>>> routing;
    std::uint64_t cycles = 0; ///< kernel cycles of the whole run
    double seconds = 0;       ///< simulated seconds
    std::vector<ChannelTotals> channels;
    /// Per DDR channel after the run, once the posted writes still queued at its end are issued:
    /// what a replay of the run's requests ends with (last data beat, row outcomes, bursts).
    std::vector<memory::ChannelStats> ddr_drained;
    std::vector<std::pair<std::string, std::uint64_t>> unit_busy; ///< per unit instance: busy cycles
    std::array<std::uint64_t, card::unit_kind_count>
        kind_busy{}; ///< per unit kind: its instances' busy cycles
    /// Per unit kind: its commands and their time, the same whether or not the run kept records.
    std::array<KindTotals, card::unit_kind_count> kind_time{};
    std::optional<std::string> fault; ///< the bus error that stopped the run
    double host_seconds = 0;  ///< wall-clock time of the whole simulation (elaboration and load included)
    double setup_seconds = 0; ///< of which elaboration and loading the DDR image
    double steps_seconds = 0; ///< of which running the steps (the per-token cost)
};

/// Fills `result` from `card` after its run: its fault, its commands' records (all of them, or
/// each unit kind's totals without `keep_records`) sorted by step and index, the cycles and seconds
/// to the last of `result.step_end`, the DDR channels' totals and the units' busy cycles.
void collect(Card& card, bool keep_records, RunResult& result);

/// Elaborates a card for `config`, loads `loaded`, runs `plan`, and returns what happened.
/// SystemC elaborates one simulation per process: call this once per process. Throws
/// cardsim::Error when the program does not fit the card.
RunResult simulate(const card::CardConfig& config, const program::Loaded& loaded, const RunPlan& plan);

/// Elaborates a card for `config` holding every program of `buckets` (one lowering of a graph
/// for several buckets, lower::lower_set: the same weights, caches and states regions and the
/// same DDR image; else cardsim::Error naming the bucket and the region that differs), and runs
/// `plan`'s steps, each on its bucket's commands and io places. A step whose `not_before_seconds`
/// is later than the time the previous one ended starts then (one wait, the units idle: the gap
/// counts in the run's cycles). A step's inputs that name a slot past the stores (or give the
/// wrong number of slots) stop the run with a fault naming the step, the row and the slot. One
/// simulation per process, as `simulate` above (which is this with one bucket).
RunResult simulate(const card::CardConfig& config, std::span<const program::Loaded> buckets,
                   const SessionPlan& plan);

} // namespace cardsim::sim
