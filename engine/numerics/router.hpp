#pragma once
// The router of a mixture of experts: from one row's E logits (the router matvec's f32 outputs,
// its bias included where the family has one) to the k chosen experts and their weights.
//
// 1. Choice. The experts in order of logit, larger first, ties to the lower expert index (-0 and
//    +0 are equal); the first k of that order are chosen, listed in it (e_1 has the top logit).
// 2. Weights. m = z_(e_1); p_e = exp(z_e - m) for each expert summed (the subtraction one f32
//    operation, which may overflow to -inf; exp correctly rounded, functions.hpp), so p_(e_1) = 1.
//    - TopK (softmax over the k chosen logits: qwen3_moe, qwen3_next with `norm_topk_prob`,
//      qwen3_5_moe, gpt_oss): S = window sum (exact_sum.hpp) of p_(e_1) .. p_(e_k), rounded once;
//      w_i = p_(e_i) / S (one f32 division). Softmax over all E then renormalised over the k
//      chosen is the same real number, since the top logit is always chosen.
//    - All (`norm_topk_prob` false: the chosen softmax probabilities as they are): Z = window
//      sum of p_e over all E experts, rounded once; w_i = p_(e_i) / Z.
// 3. A NaN or an infinity among the logits (an overflowed or NaN router output) chooses experts
//    0 .. k-1 with every weight the quiet NaN: the row's expert outputs become NaN.
//
// Error: each weight lies within (ln N + 5) x 2^-24 of the exact softmax weight of the same f32
// logits (N the experts summed: k for TopK, E for All). Derivation (README.md "Router"): the
// subtraction errs by 2^-24 |x_e| (x_e = m - z_e), exp and each rounding by 2^-24 relative, so
// the sum errs by 2^-24 (2 + mean of x under the softmax) relative, that mean is at most ln N
// (entropy), and w_e x_e <= x_e e^-x_e <= 1/e.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace cardsim::numerics {

/// How the router's weights are normalised (see the header comment).
enum class RouterNorm {
    TopK, ///< softmax over the k chosen logits
    All,  ///< softmax over all E logits, the k chosen probabilities not renormalised
};

/// `topk` or `all`.
std::string_view name(RouterNorm n);

/// Routes one row: writes the k = experts.size() chosen experts (in order) and their weights.
/// Throws cardsim::Error unless 1 <= k <= logits.size() and weights.size() == k.
void route(std::span<const float> logits, RouterNorm norm, std::span<std::uint32_t> experts,
           std::span<float> weights);

} // namespace cardsim::numerics
