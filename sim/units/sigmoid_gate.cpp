// The sigmoid gate unit: `x · sigmoid(gate)`, and SiLU (`x · sigmoid(x)`) on the same datapath.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class SigmoidGate final : public UnitOf<program::slots::SigmoidGate, program::slots::Silu> {
    using S = program::slots::SigmoidGate; ///< the command slots this unit reads

public:
    SigmoidGate() : UnitOf(card::UnitKind::SigmoidGate) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return c.opcode == program::Opcode::Silu ? rows_times_width<program::slots::Silu>(c)
                                                 : rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        if (c.opcode == program::Opcode::Silu) {
            auto o = program::each<program::slots::Silu>(operands);
            kernels::silu(f32s(o.x), f32s(o.out));
            return;
        }
        auto o = program::each<S>(operands);
        kernels::sigmoid_gate(f32s(o.x), f32s(o.gate), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> sigmoid_gate_unit(const card::CardConfig&) {
    return std::make_shared<SigmoidGate>();
}

} // namespace cardsim::sim::units
