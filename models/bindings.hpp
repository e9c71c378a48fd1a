#pragma once
// The tensor → view bindings of a graph: which checkpoint tensor, and which view of it, each op's
// constants read (what `cardsim inspect` lists, and what the shim's `one_matrix` rule looks at).

#include "engine/graph/graph.hpp"
#include "engine/graph/weight_source.hpp"
#include "models/build.hpp"
#include "models/view_text.hpp"

#include <string>
#include <vector>

namespace cardsim::models {

/// One constant of one op.
struct Binding {
    std::size_t op = 0; ///< index in Graph::ops
    graph::Site site;   ///< where the op sits
    std::string kind;   ///< the op's kind (`Gemm`)
    std::string value;  ///< the name of the value the op writes (or reads, if it writes none)
    graph::Weight weight;
};

/// Every constant of every op of `g`, in op order and, within an op, in field order.
std::vector<Binding> bindings(const BuiltGraph& g);

/// A line for a person: `layer 3 attention  Gemm → layer3.q  model.layers.3.self_attn.q_proj.weight
/// [4096, 1024]  heads of 512: rows 0..256 of eachᵀ`.
std::string describe(const Binding& b, const graph::WeightSource& source);

/// The site as `layer 3 attention` or `head`.
std::string describe(const graph::Site& site);

} // namespace cardsim::models
