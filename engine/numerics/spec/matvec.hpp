#pragma once
// The spec of the matvec unit (engine/numerics/matvec.hpp): the contract's terms built with exact
// integers and rationals from the matrix bytes and the activation, summed by the spec window.

#include "engine/numerics/activation.hpp"
#include "engine/numerics/spec/exact.hpp"
#include "engine/numerics/weights.hpp"

#include <span>
#include <vector>

namespace cardsim::numerics::spec {

/// Every row's output: the terms d x scale x 2^a of each 32-column chunk and word, exact, through
/// the window, rounded once; NaN for a NaN weight scale in the row or a NonFinite activation block.
std::vector<float> matvec(std::span<const std::byte> bytes, const MatrixLayout& layout,
                          const QuantizedActivation& a);

} // namespace cardsim::numerics::spec
