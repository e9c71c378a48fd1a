#pragma once
// The scratch of a mixture of experts: the values a Moe op computes on the way to its output
// (router logits, the chosen experts and their weights, the experts' hidden rows and outputs, the
// shared expert's), which the graph does not name. They live in one scratch area at the end of the
// arena (layout.hpp), which every Moe op of a graph reuses: the golden executor and lowering place
// them alike, so the simulator's commands read and write what the golden evaluation holds.

#include "engine/graph/batch.hpp"
#include "engine/graph/graph.hpp"

#include <cstddef>

namespace cardsim::graph {

/// Where each part of one Moe op's scratch starts, in f32 elements from the scratch's start, for
/// `rows` token rows (each part rounded up to `ALIGN`); `len` is the whole. Rows of the expert
/// parts are (row, slot) pairs: row r's slot j is row r·top_k + j.
struct MoeScratch {
    std::size_t logits = 0;                                     ///< rows × experts router logits
    std::size_t experts = 0;                                    ///< rows × top_k chosen experts (u32)
    std::size_t weights = 0;                                    ///< rows × top_k routing weights
    std::size_t gate = 0, up = 0, act = 0;                      ///< rows·top_k × intermediate each
    std::size_t expert_out = 0;                                 ///< rows·top_k × width
    std::size_t shared_gate = 0, shared_up = 0, shared_act = 0; ///< rows × shared_intermediate each
    std::size_t shared_out = 0;                                 ///< rows × width
    std::size_t shared_logit = 0;                               ///< rows × 1
    std::size_t len = 0;
};

/// The scratch of `o` (its input `width` wide) for `rows` token rows.
MoeScratch moe_scratch(const Moe& o, std::size_t rows, std::size_t width);

/// The scratch every Moe op of `g` shares in bucket `b`: the largest one's length (0 without experts).
std::size_t scratch_len(const Graph& g, const Bucket& b);

} // namespace cardsim::graph
