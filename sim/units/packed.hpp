#pragma once
// A packed weight operand as the matrix the kernels take, in the card's weight format.

#include "engine/card/card_config.hpp"
#include "engine/numerics/weights.hpp"

#include <cstddef>
#include <span>

namespace cardsim::sim::units {

/// The packed matrix in `bytes` of `rows` rows (0: as many as the bytes hold) and `cols` columns,
/// laid out as card `config` packs it.
numerics::MatrixView packed_matrix(const card::CardConfig& config, std::span<const std::byte> bytes,
                                   std::size_t rows, std::size_t cols);

} // namespace cardsim::sim::units
