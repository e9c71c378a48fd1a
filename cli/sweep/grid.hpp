#pragma once
// The points of a sweep: the models crossed with every axis (the last axis varies fastest),
// less the points a `skip_if` constraint leaves out; and deterministic slices of them (shards).

#include "cli/sweep/spec.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

namespace cardsim::cli::sweep {

/// One point of the grid.
struct Point {
    std::size_t id = 0;            ///< its index in the full grid (constraints do not renumber points)
    std::size_t model = 0;         ///< index into SweepSpec::models
    std::vector<AxisValue> values; ///< one per axis, in the spec's axis order
};

/// The points a spec runs, in id order.
struct Grid {
    std::vector<Point> points;
    std::size_t full_size = 0; ///< points before constraints
};

/// Crosses the spec's models and axes and drops the points any `skip_if` is true for. A
/// constraint that is not a boolean, or a type error in it, is a cardsim::Error naming the spec
/// line and the point.
Grid build_grid(const SweepSpec& spec);

/// Slice `index` of `count` (0 <= index < count).
struct Shard {
    std::size_t index = 0, count = 1;
};

/// Parses `i/N` (e.g. `0/4`); anything else is a cardsim::Error saying what was expected.
Shard parse_shard(std::string_view text);

/// The points of one shard: every `count`-th point of the grid from position `index`, so shards
/// are disjoint, cover the grid, and differ in size by at most one point.
std::vector<Point> shard_points(const std::vector<Point>& points, Shard shard);

/// The `--set path=value` overrides that make a point's card config from the base.
std::vector<card::Override> overrides(const SweepSpec& spec, const Point& point);

/// The tokens a point generates: its `tokens` axis value, or the spec's `tokens`.
std::size_t point_tokens(const SweepSpec& spec, const Point& point);
/// The sequences a point decodes a step: its `seqs` axis value, or the spec's `seqs`.
std::size_t point_seqs(const SweepSpec& spec, const Point& point);
/// A `[serve]` option at `point`: its axis value (`path`, e.g. `serve.token_budget`), or `single`.
std::size_t point_serve(const SweepSpec& spec, const Point& point, std::string_view path, std::size_t single);
/// The routing model of `point`: its `routing` axis value, or the spec's `routing` (none: run's default).
std::optional<std::string> point_routing(const SweepSpec& spec, const Point& point);
/// The plan of `point`: its `plan` axis value, or the spec's `plan` (`none`: one card).
std::string point_plan(const SweepSpec& spec, const Point& point);
/// The Poisson rate at `point`: the `serve.rate` axis value, or the spec's rate.
double point_rate(const SweepSpec& spec, const Point& point);

/// The point as `model=... ddr.channels=2 clock.kernel_mhz=250` (for listings and messages).
std::string describe(const SweepSpec& spec, const Point& point);

} // namespace cardsim::cli::sweep
