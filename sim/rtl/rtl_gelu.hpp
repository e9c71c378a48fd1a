#pragma once
// The RTL's GELU (rtl/gelu_pkg.sv, the matvec's GELU epilogue) evaluated through its Verilated
// module rtl/gelu.sv, for tests and sweeps that hold it to numerics::gelu bit for bit.

#include <cstdint>
#include <span>

namespace cardsim::sim::rtl {

/// out[i] = the RTL's gelu of the f32 pattern in[i] (spans of equal size). Throws cardsim::Error
/// when this build has no RTL.
void rtl_gelu(std::span<const std::uint32_t> in, std::span<std::uint32_t> out);

} // namespace cardsim::sim::rtl
