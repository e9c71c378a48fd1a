// The GELU unit (optional): the exact (erf) GELU of each element.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Gelu final : public UnitOf<program::slots::Gelu> {
    using S = program::slots::Gelu; ///< the command slots this unit reads

public:
    Gelu() : UnitOf(card::UnitKind::Gelu) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command&, Operands operands) const override {
        auto o = program::each<S>(operands);
        kernels::gelu(f32s(o.x), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> gelu_unit(const card::CardConfig&) {
    return std::make_shared<Gelu>();
}

} // namespace cardsim::sim::units
