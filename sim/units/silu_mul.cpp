// The SiLU-multiply unit: `silu(gate) · up`, the SwiGLU of an MLP; with `units.silu_mul.clamp`
// also gpt-oss's clamped SwiGLU.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class SiluMul final : public UnitOf<program::slots::SiluMul, program::slots::SwigluClamp> {
    using S = program::slots::SiluMul;     ///< the command slots this unit reads
    using C = program::slots::SwigluClamp; ///< and of the clamped SwiGLU

public:
    SiluMul() : UnitOf(card::UnitKind::SiluMul) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return c.opcode == C::opcode ? rows_times_width<C>(c) : rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        if (c.opcode == C::opcode) {
            auto p = program::args<C>(c).params;
            auto o = program::each<C>(operands);
            kernels::swiglu_clamp(f32s(o.gate), f32s(o.up), static_cast<float>(p.limit),
                                  static_cast<float>(p.alpha), f32s(o.out));
            return;
        }
        auto o = program::each<S>(operands);
        kernels::silu_mul(f32s(o.gate), f32s(o.up), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> silu_mul_unit(const card::CardConfig&) {
    return std::make_shared<SiluMul>();
}

} // namespace cardsim::sim::units
