#pragma once
// What a run page shows that a trace's records do not carry: the model, the run's figures as
// `cardsim run` prints them, the card config and the shim's verdicts. A run records them in its
// trace as `meta` lines (`run.model`, `run.summary`, `run.card`, `run.shim`; FORMAT.md lets a
// producer add facts there without a new format version), so `cardsim report TRACE` can show them.

#include "traces/trace.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::traces::report {

/// One DDR channel's totals over the run.
struct ChannelFacts {
    std::uint64_t read = 0, written = 0, row_hits = 0, row_misses = 0, row_conflicts = 0;
    friend bool operator==(const ChannelFacts&, const ChannelFacts&) = default;
};

/// Accuracy of the card's logits against the f64 reference.
struct AccuracyFacts {
    std::size_t steps = 0;
    double max_abs_error = 0, top1_agreement = 0, kl = 0;
    friend bool operator==(const AccuracyFacts&, const AccuracyFacts&) = default;
};

/// What the host spent on the run (wall clock). Never recorded in a trace: it changes from run
/// to run, and two runs of one program must give byte-identical traces.
struct HostFacts {
    double seconds = 0, setup_seconds = 0, steps_seconds = 0; ///< the simulation: in all, setup, steps
    double load = 0, compile = 0;                             ///< before it
    std::optional<double> golden, reference;                  ///< after it, when they ran
    /// Where the compile's weights came from: `packed`, `cache` (the pack cache), `none` (shapes
    /// only), `program` (a program file); empty: not said.
    std::string weights{};
    double prefill_seconds = 0; ///< a --prompt-len prefill's simulation, part of `seconds` (0: none)
    friend bool operator==(const HostFacts&, const HostFacts&) = default;
};

/// What the `host:` line adds after the compile's time for where its weights came from (`weights`
/// as HostFacts::weights): ` (weights from the pack cache)`, ` (shapes only: no weights packed)`,
/// or nothing.
std::string_view weights_phrase(std::string_view weights);

/// The host's phases up to the outputs, as `cardsim run` prints them after `host: `: `load 0.01 s,
/// compile 0.20 s, simulation 0.53 s (setup 0.02 s, steps 0.51 s: 42.5 ms a step, 6.61x the
/// simulated time), golden 0.30 s, reference 1.20 s` for a run of `steps` steps simulating
/// `simulated_seconds`; a prefill's simulation is the first part in the parentheses (`prefill
/// 3.90 s, setup ...`).
std::string host_phases(const HostFacts& host, std::size_t steps, double simulated_seconds);

/// One row of the shim's verdict table: groups of the fusion with the same answer, class, ops and
/// commands in one part of the model, over the layers listed.
struct VerdictRow {
    std::string part;      ///< `mixer`, `ffn`, `head`, ...
    std::string layers;    ///< `0-23`, `0, 2, 4`, or empty outside layers
    std::string answer;    ///< `native`, `decompose`, `command` (one op on its own) or `refused`
    std::string cls;       ///< the fusion class (empty for one op on its own)
    std::string ops;       ///< the op kinds (`Conv, Silu`)
    std::string commands;  ///< the commands it runs as (`conv`), `-` for none
    std::size_t count = 0; ///< groups the row stands for
    friend bool operator==(const VerdictRow&, const VerdictRow&) = default;
};

/// The shim's answers for the model on the card.
struct Verdicts {
    std::vector<VerdictRow> rows;
    std::vector<std::string> declined; ///< merges not made, `class: reason`
    std::vector<std::string> refusals; ///< `layer 3, ffn: reason`
    std::string verdict;               ///< the last line of `cardsim check`
    friend bool operator==(const Verdicts&, const Verdicts&) = default;
};

/// The facts of one run. Figures are raw values; the page formats them as `cardsim run` does.
struct RunFacts {
    std::string model;
    std::optional<std::string> program; ///< the program file, when one was run
    std::vector<std::uint32_t> prompt{}, generated{};
    std::optional<std::string> fault{};
    std::size_t steps = 0, prefill_steps = 0;
    std::size_t seqs = 1; ///< sequences a step (token rows of a decode step); the prompt is sequence 0's
    /// With several sequences: each one's prompt and generated tokens.
    std::vector<std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>> sequences{};
    std::uint64_t cycles = 0;
    double seconds = 0;
    std::vector<std::uint64_t> step_end{}; ///< the cycle each step ended
    std::uint64_t ddr_bytes = 0;
    double peak_bytes_per_second = 0;
    std::uint64_t arena_bytes = 0;
    std::vector<ChannelFacts> channels{};
    double watts = 0;  ///< the run's average power estimate (engine/fit)
    std::string fit{}; ///< whether the config fits the device: `fit: yes (...)` / `fit: no: ...`
    std::vector<std::pair<std::string, std::uint64_t>> unit_busy{}; ///< per unit instance, busy cycles
    std::optional<bool> bit_exact{};
    std::string mismatch{}, unchecked{};
    std::optional<std::size_t> mismatch_step{}, mismatch_layer{};
    std::vector<std::size_t> layers_checked{};
    std::optional<AccuracyFacts> accuracy{};
    std::optional<HostFacts> host{}; ///< only for a page made by the run itself
    std::string card{};              ///< the card config's canonical text (card::canonical_text)
    std::optional<Verdicts> verdicts{};
    friend bool operator==(const RunFacts&, const RunFacts&) = default;
};

/// Adds the facts to a trace header's meta (`run.*` keys; `host` is left out, see HostFacts).
void record(const RunFacts& facts, std::map<std::string, std::string>& meta);

/// The facts recorded in `header`'s meta, or nothing when it has no `run.summary`. A recorded
/// value that does not parse is a cardsim::Error naming `source`, the key and what was expected.
std::optional<RunFacts> recorded(const Header& header, std::string_view source);

} // namespace cardsim::traces::report
