#pragma once
// The spec of activation quantisation (engine/numerics/activation.hpp), in exact rationals.

#include "engine/numerics/activation.hpp"
#include "engine/numerics/spec/exact.hpp"

#include <span>

namespace cardsim::numerics::spec {

/// Quantises `row` under `scheme` straight from the contract: for each block, the least e with
/// round_half_even(amax / 2^e) <= M found by stepping e up from below, codes by exact division,
/// the residual of word one exactly, NaN/inf blocks flagged.
QuantizedActivation quantize(std::span<const float> row, const Scheme& scheme, std::size_t weights_group);

/// The exact value word 1 (+ word 2) stands for at value j; `q` must not flag j's block.
Rational value(const QuantizedActivation& q, std::size_t j);

} // namespace cardsim::numerics::spec
