// The add unit: the elementwise sum of two rows (the residual connections).

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Add final : public UnitOf<program::slots::Add, program::slots::SumPartials> {
    using S = program::slots::Add; ///< the command slots this unit reads
    using P = program::slots::SumPartials;

public:
    Add() : UnitOf(card::UnitKind::Add) {}

    /// Elements: rows · width; a join of parts: elements · parts (one exact add a part).
    std::uint64_t work(const program::Command& c, const Step&) const override {
        if (c.opcode == P::opcode) {
            auto d = program::args<P>(c).dims;
            return d.elements * d.parts;
        }
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        if (c.opcode == P::opcode) {
            auto o = program::each<P>(operands);
            kernels::sum_partials(o.x, o.others, program::args<P>(c).dims.parts, f32s(o.out));
            return;
        }
        auto o = program::each<S>(operands);
        kernels::add(f32s(o.a), f32s(o.b), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> add_unit(const card::CardConfig&) {
    return std::make_shared<Add>();
}

} // namespace cardsim::sim::units
