#pragma once
// The combine of a mixture of experts: one row's k expert outputs scaled by their routing weights
// (router.hpp), plus the shared expert's output under its sigmoid gate where the family has one
// (qwen3_next, qwen3_5_moe), as one exact sum per column:
//   y_c = window sum (exact_sum.hpp) of the exact products w_i x e_(i,c) (i = 1 .. k) and
//         g x s_c, rounded once to f32, with g = sigmoid(gate logit) correctly rounded
//         (functions.hpp; the gate logit is the `shared_expert_gate` matvec's output).
// The order of the experts never changes a bit. y_c is the quiet NaN when a factor of one of its
// products is not finite (a weight, g, e_(i,c) or s_c): a NaN weight or gate makes the whole row
// NaN. Error: the correctly rounded exact sum (0.5 ulp) unless a product falls below the window's
// 64 places, then under (k + 1) x 2^-63 of the largest product more.

#include "engine/numerics/partial_sum.hpp"

#include <cstddef>
#include <optional>
#include <span>

namespace cardsim::numerics {

/// The shared expert of a row: its gate's logit and its output (one value per column).
struct SharedExpert {
    float gate_logit = 0;
    std::span<const float> out;
};

/// y = the combine of `weights` (k) over `outputs` (k rows of y.size() values, row i expert i's)
/// and `shared`. Throws cardsim::Error when the sizes disagree.
void combine(std::span<const float> weights, std::span<const float> outputs,
             const std::optional<SharedExpert>& shared, std::span<float> y);

/// One card's part of the combine under expert parallelism: the exact part (partial_sum.hpp) of
/// each column's terms, where a slot whose expert lives on another card has the output +0 (a term
/// that adds nothing) and `shared` is given on the one card that runs the shared expert. The
/// cards' parts of a column, joined (numerics::join), are `combine`'s bits whenever exact_join
/// holds: every term then lies inside the whole sum's window. A column `combine` makes NaN (a
/// non-finite weight, gate or output on this card) is a Nan part.
void combine_partial(std::span<const float> weights, std::span<const float> outputs,
                     const std::optional<SharedExpert>& shared, std::span<PartialSum> y);

} // namespace cardsim::numerics
