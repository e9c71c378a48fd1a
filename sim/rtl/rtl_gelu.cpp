// The Verilated rtl/gelu.sv driven one input at a time (a combinational module: one eval each).

#include "sim/rtl/rtl_gelu.hpp"

#include "engine/error.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <Vgelu.h>
#include <verilated.h>
#pragma GCC diagnostic pop

#include <memory>

namespace cardsim::sim::rtl {

void rtl_gelu(std::span<const std::uint32_t> in, std::span<std::uint32_t> out) {
    if (in.size() != out.size()) throw Error("rtl_gelu: the input and output spans differ in size");
    auto context = std::make_unique<VerilatedContext>();
    Vgelu model(context.get());
    for (std::size_t i = 0; i < in.size(); ++i) {
        model.x = in[i];
        model.eval();
        out[i] = model.y;
    }
    model.final();
}

} // namespace cardsim::sim::rtl
