#pragma once
// A sweep spec (configs/sweeps/*.toml; the format is documented in docs/sweeps.md): the base card
// config, the models, the run mode and the axes whose values are crossed into a grid of points.

#include "cli/sweep/expr.hpp"
#include "engine/card/card_config.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cardsim::cli::sweep {

/// One value an axis takes: a TOML integer, float, string or boolean.
using AxisValue = std::variant<std::int64_t, double, std::string, bool>;

/// The value as a CSV cell and as `--set` text: `4`, `250.5`, `sub32`, `true`. A float keeps a
/// decimal point or exponent (`250.0`) so that it reads back as a float.
std::string cell(const AxisValue& v);

/// The value as TOML (strings quoted), the right side of a `--set path=value`.
std::string toml_literal(const AxisValue& v);

/// The value for a constraint expression (integers become numbers).
Value expression_value(const AxisValue& v);

/// A checkpoint `cardsim make-model` writes once per sweep output directory.
struct GeneratedModel {
    std::string arch; ///< dense | hybrid | hybrid-moe | moe | encoder
    std::string size; ///< tiny | small | 0.1b | 0.8b; shapes only also 1.7b | 4b | 8b | 14b | 32b
    std::uint64_t seed = 0;
    bool shapes_only = false; ///< config.json alone (`make-model --shapes-only`): timing-only points
};

/// One model of the sweep: its name (the `model` column) and where it comes from.
struct ModelSource {
    std::string name;
    std::variant<std::filesystem::path, GeneratedModel> source;
};

/// The name of the axis a `tokens = [8, 64]` array makes: it sets `cardsim run --tokens`, not a
/// config key.
inline constexpr std::string_view tokens_axis = "tokens";
/// The axis a `seqs = [1, 4, 16]` array makes: it sets `cardsim run --seqs` (sequences a decode
/// step), not a config key.
inline constexpr std::string_view seqs_axis = "seqs";
/// The axis a `routing = ["uniform", "skew:1.2"]` array makes: it sets `--routing` (how a
/// timing-only point's Moe layers choose their experts), not a config key.
inline constexpr std::string_view routing_axis = "routing";
/// The axis a `plan = ["none", "pp", "tp"]` array makes: `cardsim run --plan` (how a model splits over
/// the `system.cards` cards; `none`: one card), not a config key.
inline constexpr std::string_view plan_axis = "plan";
/// The axes a `[serve]` table's arrays make (`serve.rate = [5.0, 10.0]`): options of `cardsim serve`.
inline constexpr std::string_view serve_axes[] = {"serve.rate", "serve.token_budget", "serve.max_seqs",
                                                  "serve.chunk"};
/// Whether an axis sets an option of `cardsim run` or `cardsim serve` (tokens, seqs, routing, plan, serve.*)
/// rather than a config key.
inline bool run_axis(std::string_view path) {
    return path == tokens_axis || path == seqs_axis || path == routing_axis || path == plan_axis ||
           path.rfind("serve.", 0) == 0;
}

/// A `[serve]` table: every point serves a request trace (`cardsim serve`) instead of decoding a
/// fixed batch. The trace is a file (`requests`), or Poisson requests made up per point (`rate`,
/// `count`, `prompt_len`, `output_len`, `seed`); the scheduler's policy, token budget, chunk and
/// sequence cap are its options. `rate`, `token_budget`, `max_seqs` and `chunk` may be arrays: axes.
struct ServeSpec {
    std::optional<std::filesystem::path> requests;
    double rate = 10;
    std::size_t count = 32;
    std::string prompt_len = "32", output_len = "32";
    std::uint64_t seed = 1;
    std::string policy = "decode-first";
    std::size_t token_budget = 16, chunk = 0, max_seqs = 0;
};

/// One swept config key (or `tokens`): its dotted path and its values, in order.
struct Axis {
    std::string path;
    std::vector<AxisValue> values;
    std::string where; ///< spec file and line, for messages
};

/// One `skip_if` constraint: points where it is true are left out of the grid.
struct Constraint {
    Expression expression;
    std::string where;
};

/// A parsed, validated sweep spec. Relative paths in the file are resolved against its directory.
struct SweepSpec {
    std::filesystem::path file;                  ///< the spec file (absolute)
    std::string name;                            ///< `name`, default the file's stem
    std::optional<std::filesystem::path> config; ///< base card config; none = the built-in D5005
    std::vector<ModelSource> models;
    std::size_t tokens = 8;            ///< tokens each point generates (unless `tokens` is an axis)
    std::size_t seqs = 1;              ///< sequences each point decodes a step (unless `seqs` is an axis)
    std::vector<std::uint32_t> prompt; ///< prompt ids; empty = run's default
    /// A prompt length each point prefills (`run --prompt-len`, timing-only), in chunks of `chunk`:
    /// the results gain the prefill and decode columns.
    std::optional<std::size_t> prompt_len;
    std::size_t chunk = 16;
    /// The routing model of timing-only points with experts (`--routing`: uniform | skew:S |
    /// trace:FILE, the file resolved against the spec's folder), unless `routing` is an axis; none:
    /// run's default (uniform). Its seed: `routing_seed`.
    std::optional<std::string> routing;
    std::uint64_t routing_seed = 0;
    /// How each point splits its model over the cards (`--plan`: `pp`), unless `plan` is an axis;
    /// `none` (the default) runs one card.
    std::string plan = "none";
    bool full = false; ///< full runs (bit-exact check + accuracy), else timing-only
    /// Where full points keep packed weights (`--pack-cache`), so that points packing the same
    /// checkpoint in the same format pack it once: this folder (relative to the spec); an empty
    /// path (`pack_cache = false`) for none; unset, $CARDSIM_PACK_CACHE as the points inherit it.
    /// Not on by default: on a 2-core guest a hit saves little over packing int8/E8M0 weights,
    /// and the first point's entry costs more (docs/sweeps.md).
    std::optional<std::filesystem::path> pack_cache;
    std::optional<ServeSpec> serve; ///< points serve a request trace (`[serve]`)
    std::vector<Axis> axes;         ///< in the order the file lists them
    std::vector<Constraint> skip_if;
    card::CardConfig base; ///< the base config as loaded (for constraint names)
};

/// Reads and validates the spec at `path`. Every problem is a cardsim::Error naming the file,
/// the line, the key and what was expected; every axis value is checked against the card config's
/// schema (so `ddr.channels = [0]` fails here, not in the middle of a sweep).
SweepSpec load_sweep_spec(const std::filesystem::path& path);

/// As `load_sweep_spec`, from `text`; `file` names it in errors and anchors its relative paths.
SweepSpec parse_sweep_spec(std::string_view text, const std::filesystem::path& file);

} // namespace cardsim::cli::sweep
