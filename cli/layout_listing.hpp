#pragma once
// The listing of a graph's arena layout, shared by `cardsim layout` and (until the end-to-end
// demo lands) `cardsim demo`.

#include "engine/graph/graph.hpp"

#include <string>

namespace cardsim::cli {

/// One line per value (name, rows × width, offset, bytes) and the arena size, in bytes.
std::string layout_listing(const graph::Graph& g, const graph::Bucket& b);

} // namespace cardsim::cli
