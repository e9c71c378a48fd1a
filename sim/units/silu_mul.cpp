// The SiLU-multiply unit: `silu(gate) · up`, the SwiGLU of an MLP.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class SiluMul final : public UnitOf<program::slots::SiluMul> {
    using S = program::slots::SiluMul; ///< the command slots this unit reads

public:
    SiluMul() : UnitOf(card::UnitKind::SiluMul) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command&, Operands operands) const override {
        auto o = program::each<S>(operands);
        kernels::silu_mul(f32s(o.gate), f32s(o.up), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> silu_mul_unit(const card::CardConfig&) {
    return std::make_shared<SiluMul>();
}

} // namespace cardsim::sim::units
