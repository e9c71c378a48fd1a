// The GeGLU unit (optional): `gelu(first half) · second half` of each row.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Geglu final : public UnitOf<program::slots::GeGlu> {
    using S = program::slots::GeGlu; ///< the command slots this unit reads

public:
    Geglu() : UnitOf(card::UnitKind::Geglu) {}

    /// Output elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::geglu(f32s(o.x), d.width, f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> geglu_unit(const card::CardConfig&) {
    return std::make_shared<Geglu>();
}

} // namespace cardsim::sim::units
