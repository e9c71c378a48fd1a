#pragma once
// The stages of `cardsim run`, in the order the run takes them, each a short function from typed
// inputs to a typed output: load → feed → check → compile → simulate → verify → measure → report.
// cli/pipeline.cpp's run_model calls them in that order and times each (HostPhases).

#include "cli/decode_batch.hpp"
#include "cli/pipeline.hpp"
#include "engine/graph/batch.hpp"
#include "engine/graph/routing.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/lower/plan.hpp"
#include "engine/program/loaded.hpp"
#include "models/model.hpp"
#include "sim/memory/trace_export.hpp"
#include "sim/system/system.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::cli::stages {

/// What the run starts from: the checkpoint and its graph, a compiled program, or both (the
/// program checked against the checkpoint it was compiled from).
struct Source {
    std::optional<models::Model> model;
    std::optional<models::BuiltGraph> built;
    std::optional<program::Loaded> program; ///< a program file and its image, read and validated
    /// Under a plan, from program files: each card's program and image (PROG.cardK); `program`
    /// is then the last card's without its image.
    std::vector<program::Loaded> cards;
    std::string name;    ///< the recognised architecture (or the program's model)
    bool decoder = true; ///< a decoder (token by token) or an encoder (one step)
    std::size_t vocab = 0;
};

/// What the run feeds the card, step by step: a decoder's sequences (prompts, then each step's
/// own arg-max) or the encoder's one prompt with its markers.
struct Feed {
    bool decoder = true;
    std::vector<std::uint32_t> prompt; ///< sequence 0's prompt (the encoder's only one)
    std::size_t seqs = 1;              ///< sequences a step
    DecodeBatch batch;                 ///< a decoder's sequences
    std::vector<std::size_t> markers;  ///< an encoder's marker rows
    std::size_t steps = 0, prefill_steps = 0;
};

/// The program the card runs, and (with a prompt length) the prefill phase timed on its own
/// program in a child process.
struct Compiled {
    program::Loaded program; ///< under a plan over several cards: the last card's (the outputs)
    std::optional<Phase> prefill;
    std::vector<program::Loaded> cards; ///< under a plan: each card's program
    std::vector<lower::Stage> stages;   ///< under a plan: each card's part
    std::vector<std::string> parts;     ///< under a plan: each card's part in words
    /// Where the weights came from: `packed` (quantised now), `cache` (the pack cache,
    /// CARDSIM_PACK_CACHE), `none` (timed from shapes: no weight bytes), `program` (a program file).
    std::string weights = "program";
    std::vector<models::BuiltGraph> shards; ///< under tensor parallel: each card's graph
    /// Under a pipeline: the groups a decode step's sequences are stepped in (each a step of
    /// the simulation, its rows naming their sequences' store slots); 1 otherwise.
    std::size_t microbatches = 1;
};

/// What the simulated card did, and every step's inputs (a full run's bit-exact check replays them).
/// The files a run's simulation wrote and staged (`--ddr-trace`, `--routing-out`): renamed into
/// place with the run's other outputs (write_outputs), or removed when the run fails first.
struct Staged {
    std::unique_ptr<sim::memory::TraceExporter> ddr;
    std::optional<io::AtomicFile> routing;
};

struct Simulated {
    sim::RunResult run;
    Staged staged;
    std::vector<graph::BatchInputs> inputs;
    std::string ddr_trace; ///< what the exported DDR trace holds, when one was written
    std::optional<sim::system::SystemResult> system; ///< under a plan: each card's run and the links
    /// With microbatches: each microbatch step's outputs as the card wrote them (what the bit-exact
    /// check replays against); `run` then holds each decode step's, its groups' rows joined.
    std::vector<sim::StepOutputs> microbatch_outputs;
    /// Host seconds spent after the simulation on the files it streams (closing the DDR trace and
    /// summing it up, `--routing-out`): the outputs phase's, not the simulation's.
    double outputs_seconds = 0;
};

/// The bit-exact check of a run: its verdict, or why it did not run.
struct Verdict {
    std::optional<bool> bit_exact;
    std::string mismatch;
    std::optional<verify::Mismatch> first;
    std::string unchecked;
};

/// Refuses a request whose options contradict each other, before any work (cardsim::Error).
void check_request(const RunRequest& request);

/// The routers of program `p` (its Route commands by router number: experts and top_k), and in
/// `rows` the rows each routes.
std::vector<graph::RouterShape> routers_of(const program::Program& p, std::size_t& rows);

/// The routers of the programs of a system's `cards` (a Moe layer is routed on the card that
/// holds it, by the graph's router number), or of one card's.
std::vector<graph::RouterShape> routers_of(std::span<const program::Loaded> cards, std::size_t& rows);

/// The routers of every card's program (under a plan: a Moe layer is routed on the card that
/// holds it, by the graph's router number), else of the one program.
std::vector<graph::RouterShape> routers_of(const Compiled& c, std::size_t& rows);

/// Where a compile with `options` got its weights: `none` (shapes only), `cache` (`from_cache`:
/// the pack cache) or `packed`.
std::string weights_from(const lower::Options& options, bool from_cache);

/// Loads the checkpoint and builds its graph, and reads the program file with its image (checked
/// against the card config and, given both, against the checkpoint).
Source load(const RunRequest& request);

/// Works out what the run feeds: prompts, sequences, steps, markers; refuses prompts past the
/// vocabulary and counts that do not match a program's bucket.
Feed feed(const RunRequest& request, const Source& source);

/// The shim's verdict on the checkpoint's graph: a cardsim::Refusal listing every refusal when the
/// card does not run it (exit code 1, as `cardsim check` gives for the same model).
void check(const RunRequest& request, const Source& source);

/// The program the card runs: the program file as read, or the checkpoint lowered for the feed's
/// bucket (with a prompt length, the prefill timed first in a child process).
Compiled compile(const RunRequest& request, Source& source, const Feed& feed);

/// Runs the program on the SystemC card, step by step, with the feed's inputs.
Simulated simulate(const RunRequest& request, const Compiled& compiled, Feed& feed);

/// The golden executor `verify` will run, its dense matrices packed (golden::Golden::prepare), for
/// a run that will be checked (full, with a checkpoint, the one-card contract); null otherwise.
/// Reads only the request, the source and the compiled program: it may run while the card does.
std::unique_ptr<golden::Golden> prepare_golden(const RunRequest& request, const Source& source,
                                               const Compiled& compiled);

/// Compares every output the card wrote with the golden executor's, bit for bit (full runs with
/// a checkpoint), on `prepared` when given (from prepare_golden).
Verdict verify(const RunRequest& request, const Source& source, const Compiled& compiled,
               const Simulated& simulated, std::size_t seqs,
               std::unique_ptr<golden::Golden> prepared = nullptr);

/// The logits' accuracy against the f64 reference (full, bit-exact-checked runs that produce logits).
std::optional<models::Accuracy> measure(const RunRequest& request, const Source& source,
                                        const Compiled& compiled, const Simulated& simulated,
                                        const Feed& feed);

/// Writes the trace, the Perfetto, CSV and report files the request asks for, and renames them
/// into place with the files the simulation staged: all of them, or none when one cannot be written.
void write_outputs(const RunRequest& request, const RunReport& report, const Source& source,
                   const Compiled& compiled, Staged staged);

} // namespace cardsim::cli::stages
