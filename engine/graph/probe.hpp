#pragma once
// Values observed inside a step: a layer's output, read where it stands in the step, not at its
// end (the residual stream is one value written in place by every layer).

#include "engine/graph/graph.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace cardsim::graph {

/// `value` as it stands right after op `after` has run.
struct Probe {
    Val value;
    std::size_t after = 0;
    std::optional<std::size_t> layer; ///< the layer whose output it is, for reports
    friend bool operator==(const Probe&, const Probe&) = default;
};

/// The layers of `g`: one more than the largest layer an op's site names (0 when none does).
std::size_t layer_count(const Graph& g);

/// Layer `layer`'s output: the one value its last op writes (the residual stream after the
/// layer), observed after that op. Throws cardsim::Error when `g` has no such layer, or when that
/// op writes no value or several.
Probe layer_output(const Graph& g, std::size_t layer);

/// Checks a probe against `g`: the op exists and writes the value. Returns the problem as a
/// sentence, or nothing.
std::optional<std::string> check(const Graph& g, const Probe& p);

} // namespace cardsim::graph
