#pragma once
// The spec of the accumulator window (engine/numerics/exact_sum.hpp) on exact rationals.

#include "engine/numerics/spec/exact.hpp"

#include <vector>

namespace cardsim::numerics::spec {

/// The window rule on exact terms: H = max over nonzero terms of floor(log2 |t|) + 1, L = H - 64,
/// each term truncated toward zero to a multiple of 2^L, the exact sum rounded once to f32
/// (+0 for a zero sum).
float window_sum(const std::vector<Rational>& terms);

/// x truncated toward zero to a multiple of 2^place.
Rational truncate(const Rational& x, int place);

} // namespace cardsim::numerics::spec
