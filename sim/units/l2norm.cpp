// The L2 norm unit: each group of each row scaled to unit length (and by `scale`).

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class L2Norm final : public UnitOf<program::slots::L2Norm> {
    using S = program::slots::L2Norm; ///< the command slots this unit reads

public:
    L2Norm() : UnitOf(card::UnitKind::L2Norm) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::l2_norm(f32s(o.x), d.group, p.eps, p.scale, f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> l2norm_unit(const card::CardConfig&) {
    return std::make_shared<L2Norm>();
}

} // namespace cardsim::sim::units
