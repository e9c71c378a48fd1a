#pragma once
// One card's part of a pipeline-parallel plan: the graph ops it runs and the values it receives
// from the card before it and sends to the card after it.

#include "engine/graph/graph.hpp"

#include <cstddef>
#include <vector>

namespace cardsim::lower {

/// Card `card` of `cards` runs graph ops `first_op .. end_op`: it receives `receives` (into their
/// arena places, from card `card - 1`) before them and sends `sends` (to card `card + 1`) after
/// them; only the last card copies the graph's outputs to its io region.
struct Stage {
    std::size_t card = 0, cards = 1;
    std::size_t first_op = 0, end_op = 0;
    std::vector<graph::Val> receives, sends;
    std::uint64_t weight_elements = 0; ///< the elements of the weights its ops read (the balance)
    bool last() const { return card + 1 == cards; }
};

} // namespace cardsim::lower
