#pragma once
// One card's part of a plan over several cards: the graph ops it runs, the values it receives from
// the card before it in the pipeline and sends to the card after it, and the tensor-parallel group
// whose collectives it joins.

#include "engine/graph/graph.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cardsim::lower {

/// Card `card` of `cards` runs graph ops `first_op .. end_op` of its graph: it receives `receives`
/// (into their arena places, from card `from`) before them and sends `sends` (to card `to`) after
/// them. Under tensor parallel it is `rank` of `group`, the cards (in ring order) that split each
/// of those ops' heads and columns and join them by all-reduce. Only the card with `outputs` (the
/// system's last) copies the graph's outputs to its io region.
struct Stage {
    std::size_t card = 0, cards = 1;
    std::size_t first_op = 0, end_op = 0;
    std::vector<graph::Val> receives, sends;
    std::uint32_t from = 0, to = 0;
    std::vector<std::uint32_t> group; ///< empty: the card splits no op with another
    std::size_t rank = 0;
    bool outputs = false;
    std::uint64_t weight_elements = 0; ///< the elements of the weights its ops read (the balance)
};

} // namespace cardsim::lower
