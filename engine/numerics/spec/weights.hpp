#pragma once
// The spec of the weight quantiser and of reading a quantised matrix's bytes
// (engine/numerics/weights.hpp), in exact rationals, with its own byte packing and decoding.

#include "engine/numerics/spec/exact.hpp"
#include "engine/numerics/weights.hpp"

#include <optional>
#include <span>
#include <vector>

namespace cardsim::numerics::spec {

/// The bytes of `values` (row-major, layout.rows x layout.cols) quantised into `layout`, straight
/// from the contract.
std::vector<std::byte> quantize_matrix(std::span<const float> values, const MatrixLayout& layout);

/// The code of row r, column c, read from `bytes` as the layout documents.
int weight_code(std::span<const std::byte> bytes, const MatrixLayout& layout, std::size_t r, std::size_t c);

/// The exact scale of row r, group g, read from `bytes`; nothing when it is a NaN (or an f16 inf).
std::optional<Rational> weight_scale(std::span<const std::byte> bytes, const MatrixLayout& layout,
                                     std::size_t r, std::size_t g);

} // namespace cardsim::numerics::spec
