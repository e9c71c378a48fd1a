#pragma once
// The experts' kernels (graph::Moe), as kernels.hpp's: the router unit's route and combine and the
// matvec unit's expert matvec lay the card's operands out for the numerics contract
// (numerics/router.hpp, numerics/combine.hpp, numerics/matvec.hpp). The simulator's units and the
// golden executor both call these. Rows of the expert parts are (row, slot) pairs: row r's slot j
// (its j-th chosen expert) is row r·top_k + j.

#include "engine/numerics/router.hpp"
#include "engine/numerics/scheme.hpp"
#include "engine/numerics/weights.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace cardsim::kernels {

/// Routes each row of `logits` (`experts` wide): its top_k = chosen.size() / rows experts, in
/// order, into `chosen`, and their weights into `weights` (numerics::route).
void route(std::span<const float> logits, std::size_t experts, numerics::RouterNorm norm,
           std::span<std::uint32_t> chosen, std::span<float> weights);

/// The experts of a card: `first` .. `first + count` (every expert on one card; a share of them
/// under expert parallelism).
struct ExpertRange {
    std::uint32_t first = 0;
    std::uint32_t count = UINT32_MAX;
    bool holds(std::uint32_t e) const { return e >= first && e - first < count; }
};

/// The chosen experts' matvecs: slot (r, j) multiplies input row r (or row r·top_k + j when
/// `per_slot`) by `matrix_of(chosen[r·top_k + j])`, every matrix `n` × `k` as `out` is n wide per
/// slot. Each expert's rows run as one matvec (kernels::matvec; rows are independent, so the bits
/// are those of one matvec per slot), adding its bias when `biases` holds n values an expert of
/// `mine` (gpt-oss). A slot whose expert is not in `mine` is +0 (its card runs it). Throws
/// cardsim::Error when `matrix_of` refuses an index.
void expert_matvec(const std::function<numerics::MatrixView(std::uint32_t)>& matrix_of,
                   std::span<const float> x, std::span<const std::uint32_t> chosen, std::size_t top_k,
                   bool per_slot, const numerics::Scheme& scheme, std::span<float> out, ExpertRange mine = {},
                   std::span<const float> biases = {});

/// out[r] = the combine (numerics::combine) of row r's top_k `weights` over its top_k rows of
/// `outs`, plus, when `shared` is not empty, `shared`'s row r under sigmoid(`gate_logits[r]`).
/// Throws cardsim::Error when the sizes disagree or a shared expert comes without its gate.
void combine(std::span<const float> weights, std::span<const float> outs, std::span<const float> shared,
             std::span<const float> gate_logits, std::size_t top_k, std::span<float> out);

/// `combine`'s expert-parallel form: each output's exact part (numerics::combine_partial) as its 24
/// bytes, `out` holding rows × width parts, for the cards' all-reduce to join.
void combine_partial(std::span<const float> weights, std::span<const float> outs,
                     std::span<const float> shared, std::span<const float> gate_logits, std::size_t top_k,
                     std::span<std::byte> out);

} // namespace cardsim::kernels
