#pragma once
// A view of a checkpoint tensor written for a person (listings, errors).

#include "engine/graph/graph.hpp"

#include <string>

namespace cardsim::models {

/// The view as `whole`, `rows 0..512`, `heads of 512: rows 256..512 of each`, with `ᵀ` when the op
/// multiplies by the transpose.
std::string describe(const graph::View& view);

} // namespace cardsim::models
