// The arg-max unit: each row's index of its largest value (the first NaN wins), as an f32 integer.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Argmax final : public UnitOf<program::slots::ArgMax> {
    using S = program::slots::ArgMax; ///< the command slots this unit reads

public:
    Argmax() : UnitOf(card::UnitKind::Argmax) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::argmax(f32s(o.x), d.width, f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> argmax_unit(const card::CardConfig&) {
    return std::make_shared<Argmax>();
}

} // namespace cardsim::sim::units
