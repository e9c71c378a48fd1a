#pragma once
// The slice behind `cardsim serve`: a checkpoint in (its buckets compiled for the card's store
// slots) or a program set compiled before; a request trace served on one simulated card with continuous
// batching; the latencies out.

#include "engine/card/card_config.hpp"
#include "engine/fit/fit.hpp"
#include "engine/lower/plan.hpp"
#include "serve/metrics.hpp"
#include "serve/request.hpp"
#include "serve/scheduler.hpp"
#include "sim/card/simulation.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::cli {

/// What to serve and how.
struct ServeRequest {
    /// The checkpoint directory: compiled here, or (with `program`) the one the set was compiled
    /// from, for --check.
    std::optional<std::filesystem::path> model_dir;
    /// A program set from `cardsim compile --rows` (its image at PROGRAM.ddr), served as compiled.
    std::optional<std::filesystem::path> program;
    card::CardConfig config;
    /// Without --check, a model with experts: how rows route (graph::RoutingModel), and its seed.
    std::string routing = "uniform";
    /// Whether --routing was given (a model without experts then refuses it, rather than ignore it).
    bool routing_given = false;
    bool routing_seed_given = false; ///< likewise --routing-seed
    std::uint64_t routing_seed = 0;
    std::vector<serve::Request> requests;
    serve::Policy policy;
    /// The token budget was not given: serving a set, it is the set's largest bucket.
    bool default_budget = false;
    /// Positions each slot's caches hold (none: the most any request needs, prompt + output - 1).
    std::optional<std::size_t> max_positions;
    bool check = false; ///< full run: every step's tokens checked bit for bit against the golden executor
    /// How the model is split over `config.system.cards` cards (`--plan`): each card holds its
    /// part's set of buckets, and every step runs on every card.
    lower::Plan plan;
    bool shapes_only = false; ///< read config.json alone (timing only)
    bool progress = false;
    /// Compiling here: the pack cache directory (`--pack-cache`, else $CARDSIM_PACK_CACHE; empty: none).
    std::filesystem::path pack_cache;
};

/// What a served trace produced.
struct ServeReport {
    std::string model;
    std::vector<std::size_t> buckets; ///< token rows of each bucket program compiled
    std::size_t slots = 0;        ///< sequences whose stores the card's DDR holds (a plan's: every card's)
    std::size_t laid_out = 0;     ///< slots the programs' stores are laid out for (the most admitted)
    std::uint64_t slot_bytes = 0; ///< DDR bytes of one slot's caches and states
    std::uint64_t ddr_fixed_bytes = 0, ddr_capacity_bytes = 0; ///< weights + io + program; the card's DDR
    std::size_t max_positions = 0;
    bool from_set = false; ///< served a program set as compiled (else compiled here from the checkpoint)
    serve::ServeSummary summary;
    std::vector<serve::RequestTimes> times;
    sim::RunResult run;
    std::uint64_t ddr_bytes = 0;
    double peak_bytes_per_second = 0;
    std::optional<bool> bit_exact; ///< --check: every step equal to the golden executor's
    std::string mismatch;          ///< the first difference
    double host_seconds = 0;       ///< wall-clock seconds of the simulation
    /// The host's time, phase by phase: load (the checkpoint or the set), compile (the buckets),
    /// simulation, golden (--check), outputs (`--table`; `add_outputs`), total (the process so
    /// far, outputs included).
    double host_load = 0, host_compile = 0, host_golden = 0, host_outputs = 0, host_total = 0;
    /// Where the compile's weights came from: `packed`, `cache` (the pack cache), `none` (shapes
    /// only), `program` (a program set's file).
    std::string host_weights = "program";
    std::string system; ///< under a plan: the cards, each card's part and the links' use
    std::size_t cards = 1;
    std::uint64_t link_bytes = 0;
    double link_utilisation = 0; ///< the busiest link's busy time over the run
    fit::FitReport fit;          ///< whether the card config fits the device
    double watts = 0;            ///< average power over the run (engine/fit)

    /// Counts `seconds` of writing the outputs: in the outputs phase and the total.
    void add_outputs(double seconds) {
        host_outputs += seconds;
        host_total += seconds;
    }
    std::string text() const;
    std::string machine() const;
    /// Whether the serve is a success: no bus error, bit-exact where checked, and every request
    /// served (a refused request is a negative verdict: exit 1).
    bool ok() const { return !run.fault && bit_exact.value_or(true) && summary.refused == 0; }
};

/// Serves a program set (`program`) as compiled, or: loads the checkpoint, checks the card runs it, lowers a
/// set of buckets (1, 2, 4, … token rows up to the token budget) on slot-addressed stores, works out how many
/// sequences' caches and states (slots) the card's DDR holds beside the weights, io and programs, serves the
/// trace on one card session (each step on the smallest bucket that holds its rows, padding on the pad slot)
/// and sums it up. With `check`, every step's outputs are compared bit for bit with the golden executor's on
/// the same inputs.
ServeReport serve_model(const ServeRequest& request);

} // namespace cardsim::cli
