// The gates unit: the Gated-DeltaNet write strength (sigmoid of b) and decay of each head.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Gates final : public UnitOf<program::slots::Gates> {
    using S = program::slots::Gates; ///< the command slots this unit reads

public:
    Gates() : UnitOf(card::UnitKind::Gates) {}

    /// Heads: rows · heads.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.heads;
    }

    void compute(const program::Command&, Operands operands) const override {
        auto o = program::each<S>(operands);
        kernels::gates(f32s(o.b), f32s(o.a), f32s(o.a_log), f32s(o.dt_bias), f32s(o.beta), f32s(o.g));
    }
};

} // namespace

std::shared_ptr<const Unit> gates_unit(const card::CardConfig&) {
    return std::make_shared<Gates>();
}

} // namespace cardsim::sim::units
