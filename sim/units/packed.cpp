#include "sim/units/packed.hpp"

#include "engine/kernels/formats.hpp"

namespace cardsim::sim::units {

numerics::MatrixView packed_matrix(const card::CardConfig& config, std::span<const std::byte> bytes,
                                   std::size_t rows, std::size_t cols) {
    if (rows == 0) rows = bytes.size() / kernels::matrix_layout(config, 1, cols).row_stride();
    return numerics::MatrixView(kernels::matrix_layout(config, rows, cols), bytes, "a weight operand");
}

} // namespace cardsim::sim::units
