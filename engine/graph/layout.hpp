#pragma once
// The arena layout: every activation of a graph at an offset in one arena, for one bucket.

#include "engine/graph/graph.hpp"

#include <cstddef>
#include <vector>

namespace cardsim::graph {

/// Values packed into one arena, in f32 elements.
struct Layout {
    std::vector<std::size_t> offsets; ///< where each value starts, indexed like `Graph::vals`
    std::size_t len = 0;              ///< the arena's length, the scratch included
    /// Where the ops' scratch starts (moe_scratch.hpp: a Moe op's router logits, chosen experts,
    /// expert rows), after every value; `len` when the graph has none (no experts).
    std::size_t scratch = 0;
    friend bool operator==(const Layout&, const Layout&) = default;
};

/// Offsets are multiples of this many f32: 64 bytes, a cache line.
inline constexpr std::size_t ALIGN = 16;

/// The arena size of `s` in bucket `b`: its rows times its width, rounded up to `ALIGN`.
std::size_t padded_size(const Shape& s, const Bucket& b);

/// Lays the values of `g` out in one arena for the row counts of `b`, by a greedy interval
/// colouring over their live ranges. A value lives from the first op that touches it to the last,
/// and the outputs live to the end. Two values whose ranges overlap never share space, so an op's
/// inputs and outputs never alias unless the op is in place on one value. Values are placed largest
/// first (ties by index) at the lowest offset that fits; values no op touches get offset 0 and no
/// space. The Moe ops' scratch (moe_scratch.hpp) follows the values, at `scratch`. Runs in time near-linear
/// in the graph for graphs whose values are short-lived.
Layout layout(const Graph& g, const Bucket& b);

/// The same layout by the seed's scan over every placed value (quadratic): the reference `layout`
/// must equal offset for offset.
Layout layout_by_scan(const Graph& g, const Bucket& b);

} // namespace cardsim::graph
