// The token-type add unit (optional): adds each sequence's question-type row to its token rows.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class AddType final : public UnitOf<program::slots::AddType> {
    using S = program::slots::AddType; ///< the command slots this unit reads

public:
    AddType() : UnitOf(card::UnitKind::AddType) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.width;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::add_type(f32s(o.h), f32s(o.table), d.width, u32s(o.qtype).first(d.seqs),
                          u32s(o.seq_starts).first(d.seqs + 1));
    }
};

} // namespace

std::shared_ptr<const Unit> add_type_unit(const card::CardConfig&) {
    return std::make_shared<AddType>();
}

} // namespace cardsim::sim::units
