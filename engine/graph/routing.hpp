#pragma once
// Routing without data: what a timing-only or shapes-only run takes in place of the router's
// choice, like its prompt (an input of the run, never inside a unit). A step's routing names, per
// Moe op of the graph (its router, in graph order), each token row's chosen experts. A routing
// model makes one: `uniform` (each row draws top_k distinct experts uniformly, seeded), `skew:S`
// (Zipf popularity with exponent S over a seeded order of each layer's experts, each row drawing
// top_k distinct experts by it), or `trace:FILE` (a routing trace a full run recorded with
// `run --routing-out FILE`: a timing-only run given it has exactly that run's cycles and DDR bytes).
//
// A routing trace is text: a first line `cardsim-routing 1`, then one line per step, router and
// row, `STEP ROUTER ROW: E1 E2 ... Ek` (the row's chosen experts), in step, router, row order;
// `#` starts a comment line.

#include "engine/graph/graph.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::graph {

/// One Moe op's routing shape: how many experts it has and how many each row chooses.
struct RouterShape {
    std::size_t experts = 0, top_k = 0;
    friend bool operator==(const RouterShape&, const RouterShape&) = default;
};

/// The routers of `g` (its Moe ops), in graph order.
std::vector<RouterShape> routers(const Graph& g);

/// A step's routing: per router, rows × top_k chosen experts.
using StepRouting = std::vector<std::vector<std::uint32_t>>;

/// A recorded routing: per step.
using RoutingTrace = std::vector<StepRouting>;

/// The routing trace as text (the format above); `shapes` give each router's top_k.
std::string routing_text(const RoutingTrace& trace, std::span<const RouterShape> shapes);
/// Parses a routing trace (`source` names it in errors: file, line and what was expected).
RoutingTrace parse_routing(std::string_view text, std::string_view source);
/// Reads the routing trace at `path` (cardsim::Error naming the file when it cannot be read or parsed).
RoutingTrace read_routing(const std::filesystem::path& path);

/// How a run without the router's data routes.
class RoutingModel {
public:
    enum class Kind { Uniform, Skew, Trace };

    /// `uniform`, `skew:S` (S a finite exponent >= 0) or `trace:FILE` (the file read now); seeded by
    /// `seed`. Throws cardsim::Error naming what was expected.
    static RoutingModel parse(std::string_view spec, std::uint64_t seed = 0);

    Kind kind() const { return kind_; }
    /// The spelling it was parsed from.
    const std::string& spec() const { return spec_; }

    /// The routing of step `step` for `routers` over `rows` token rows. Deterministic: the same
    /// model, step, routers and rows give the same routing. A trace's step must exist and match
    /// the routers and rows (else cardsim::Error naming the file, the step and the router).
    StepRouting step(std::size_t step, std::span<const RouterShape> routers, std::size_t rows) const;

private:
    Kind kind_ = Kind::Uniform;
    std::string spec_;
    double exponent_ = 0;
    std::uint64_t seed_ = 0;
    RoutingTrace trace_;
};

/// How many distinct experts `routing` (rows × top_k) touches.
std::size_t distinct_experts(std::span<const std::uint32_t> routing);

} // namespace cardsim::graph
