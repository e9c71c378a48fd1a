#pragma once
// The vertical slice behind `cardsim run` and `cardsim demo`: a checkpoint (or a compiled program)
// in; a timed, bit-exact run on the simulated card out, checked against the golden executor and
// measured against the f64 reference, with its trace and exports.

#include "cli/ddr_trace_options.hpp"
#include "cli/expert_stats.hpp"
#include "cli/phase.hpp"
#include "engine/card/card_config.hpp"
#include "engine/fit/fit.hpp"
#include "engine/lower/plan.hpp"
#include "engine/verify/verify.hpp"
#include "models/accuracy.hpp"
#include "sim/card/simulation.hpp"
#include "sim/system/link.hpp"
#include "sim/system/system.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::cli {

/// What to run and what to write: a checkpoint (compiled for this run), a compiled program, or both
/// (the program, checked against the checkpoint it was compiled from).
struct RunRequest {
    std::optional<std::filesystem::path> model_dir; ///< the checkpoint directory
    std::optional<std::filesystem::path> program;   ///< a program file (its image at PROGRAM.ddr)
    card::CardConfig config;
    std::size_t tokens = 8;            ///< tokens to generate (decoders)
    bool tokens_given = false;         ///< --tokens was given: refused for an encoder rather than ignored
    std::vector<std::uint32_t> prompt; ///< prompt token ids; empty: a fixed default
    /// A decoder's sequences decoded together a step (none: 1, or a program's bucket), and the
    /// prompts of sequences 1, 2, ... (after `prompt`, sequence 0's); the others get default ones
    /// (cli/decode_batch.hpp).
    std::optional<std::size_t> seqs;
    std::vector<std::vector<std::uint32_t>> other_prompts;
    /// Compiling here: positions the caches hold (none: as many as the run's steps).
    std::optional<std::size_t> max_positions;
    /// Compiling here: `all` or layer indices whose outputs are read back and checked each step.
    std::optional<std::string> check_layers;
    sim::Mode mode = sim::Mode::Full;
    /// Read the checkpoint's config.json alone (weights placed by shape; timing-only runs). A
    /// checkpoint without safetensors is shapes-only anyway.
    bool shapes_only = false;
    /// Timing-only: a prompt of this many tokens, prefilled `chunk` tokens a step (a program compiled
    /// for a bucket of `chunk` tokens of one sequence, run in a child process), then `tokens` decode
    /// steps at the positions after it.
    std::optional<std::size_t> prompt_len;
    std::size_t chunk = 16;
    bool chunk_given = false; ///< --chunk was given: refused without --prompt-len rather than ignored
    bool reference = true;    ///< measure accuracy against the f64 reference (full runs)
    std::optional<std::filesystem::path> trace, perfetto, vcd, csv;
    std::optional<std::filesystem::path> report; ///< the run's report page (HTML)
    bool trace_data = false;                     ///< the trace carries the bytes every command wrote
    bool progress = false;                       ///< print a progress line (on a terminal)
    /// Every DDR request of the run, exported as a trace (`--ddr-trace`).
    std::optional<DdrTraceRequest> ddr_trace;
    bool rtl_matvec = false; ///< run every Matvec command through the RTL (sim/rtl), checked bit for bit
    std::optional<sim::BitFlip> flip; ///< a deliberate one-bit error in one command's output (--flip-bit)
    /// A timing-only run of a model with experts: how its rows route (graph::RoutingModel's
    /// `uniform`, `skew:S`, `trace:FILE`; none: `uniform`), seeded by `routing_seed`.
    std::optional<std::string> routing;
    std::uint64_t routing_seed = 0;
    bool routing_seed_given = false; ///< --routing-seed was given: refused where nothing routes by a model
    /// Where to write the run's routing (per step, router and row, the chosen experts).
    std::optional<std::filesystem::path> routing_out;
    /// How the model is split over `config.system.cards` cards (`--plan`; one card: One).
    lower::Plan plan;
    /// Under a pipeline, the groups a step's sequences are split into, each stepped on its own so
    /// that the stages work on different groups at once (`--microbatches`; none: the largest
    /// divisor of the sequences up to the stages).
    std::optional<std::size_t> microbatches;
    /// Compiling here: the pack cache directory (`--pack-cache`, else $CARDSIM_PACK_CACHE; empty: none).
    std::filesystem::path pack_cache;
    /// `--pack-cache` was given: refused where nothing is packed (a program, a timing-only run),
    /// rather than ignored.
    bool pack_cache_given = false;
};

/// One command kind's cycles in a run with a measuring unit (the RTL): the model's per-command
/// cycles (compute + latency) and the measured ones, summed over its commands.
struct MeasuredKind {
    std::string opcode;
    std::size_t commands = 0;
    std::uint64_t model = 0, measured = 0;
};

/// Where the host's wall-clock time went, phase by phase, in seconds. `total` is the process's
/// time from its start to the end of the run (what `time cardsim run` would show, less printing);
/// the phases need not sum to it (parsing the options and elaborating are outside them).
struct HostPhases {
    double load = 0;    ///< reading the checkpoint and building its graph, or reading the program
    double compile = 0; ///< lowering and packing the weights (a --prompt-len prefill's programs too)
    std::string weights = "program"; ///< where the weights came from (stages::Compiled::weights)
    double simulation = 0; ///< the SystemC runs: elaboration, the DDR image, the steps (and a prefill's)
    double golden = 0;     ///< the bit-exact check against the golden executor
    double reference = 0;  ///< the f64 reference and the accuracy
    double outputs = 0;    ///< the trace, Perfetto, CSV and report files
    double total = 0;
    /// Whether the golden executor did any work (packed its matrices or checked the outputs) and
    /// whether the f64 reference ran: a phase that did not run is left out of the `host:` line and
    /// empty in `--machine`, never reported as a few microseconds of nothing.
    bool golden_ran = false, reference_ran = false;
};

/// What a run produced, as numbers and as the text `cardsim run` prints.
struct RunReport {
    std::string model;                            ///< the recognised architecture
    std::vector<std::uint32_t> prompt, generated; ///< sequence 0's
    /// A decoder's sequences, each with its prompt and (full runs) the tokens it generated.
    struct Sequence {
        std::vector<std::uint32_t> prompt, generated;
    };
    std::vector<Sequence> sequences;
    std::size_t seqs = 1; ///< sequences a step
    sim::RunResult run;
    std::uint64_t ddr_bytes = 0;                    ///< every byte the run moved through DDR
    double peak_bytes_per_second = 0;               ///< the card's DDR peak
    std::uint64_t arena_bytes = 0;                  ///< on-chip SRAM the program's arena takes
    std::optional<bool> bit_exact;                  ///< full runs: outputs equal the golden executor's
    std::string mismatch;                           ///< the first difference, when not bit-exact
    std::optional<verify::Mismatch> first_mismatch; ///< the same, as fields
    std::string unchecked;                          ///< why the bit-exact check did not run, when it did not
    std::vector<std::size_t> layers_checked;        ///< the layers whose outputs the program reads back
    std::optional<std::filesystem::path> program;   ///< the program file run, when one was
    std::optional<models::Accuracy> accuracy;       ///< against the f64 reference
    std::size_t steps = 0, prefill_steps = 0;
    std::optional<Phase> prefill, decode; ///< with a prompt length: the two phases apart
    fit::FitReport fit;                   ///< whether the card config fits the device (engine/fit)
    double watts = 0; ///< the run's average power estimate (the units' busy fractions, its DDR traffic)
    /// What the exported DDR trace holds (ddr_trace_text), when one was written.
    std::string ddr_trace;
    std::vector<MeasuredKind> measured; ///< --rtl runs: the RTL's cycles beside the model's, per opcode
    HostPhases host;                    ///< the host's time, phase by phase
    std::vector<ExpertLayerStats>
        experts;                ///< per Moe layer: what the run's routing did (none without experts)
    ExpertCardLoad expert_load; ///< expert parallel: the busiest card over all its layers
    /// A system of several cards: its lines (each card's part, DDR and busy time; each link's
    /// bytes, busy time and utilisation), and the links' bytes and busy seconds in all.
    std::string system;
    std::size_t cards = 1;
    std::size_t microbatches = 1; ///< the groups of sequences a pipeline overlaps
    std::uint64_t link_bytes = 0;
    double link_busy_seconds = 0, link_utilisation = 0;
    std::vector<sim::system::LinkTotals> links; ///< each link's totals (and messages, when records were kept)

    /// The summary a person reads.
    std::string text() const;
    /// `host: load ..., compile ..., simulation ... (setup, steps), golden ..., reference ...,
    /// outputs ...; 2.31 s in all`: every phase of the process (golden and reference when they ran).
    std::string host_line() const;
    /// One `key=value` per line for machines (sweeps parse it).
    std::string machine() const;
    /// Whether the run is a success: no bus error, and bit-exact where checked.
    bool ok() const { return !run.fault && bit_exact.value_or(true); }
};

/// How busy a run kept the card, for its power estimate: each unit kind's busy cycles over its
/// instances' time, the arena as busy as the units are on average, the DDR's read and write rates.
fit::Activity activity(const card::CardConfig& config, const sim::RunResult& run);

/// The average power of `run` (engine/fit): one card's estimate, or with `system` each card's
/// over the whole run's time, summed.
double run_watts(const card::CardConfig& config, const sim::RunResult& run,
                 const sim::system::SystemResult* system);

/// Loads, checks (refusals are a cardsim::Error listing them), compiles (or reads the program and
/// its image, refusing a damaged image, a program for another card config or one compiled from
/// another checkpoint), simulates, checks and measures; writes the requested files.
RunReport run_model(const RunRequest& request);

} // namespace cardsim::cli
