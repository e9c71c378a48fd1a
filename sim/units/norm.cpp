// The norm unit: RMSNorm of each group of each row, with its weight (or `1 + w`, zero-centred).

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Norm final : public UnitOf<program::slots::RmsNorm> {
    using S = program::slots::RmsNorm; ///< the command slots this unit reads

public:
    Norm() : UnitOf(card::UnitKind::Norm) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::rms_norm(f32s(o.x), f32s(o.w), d.group, p.eps, c.flags & program::flag::ZeroCentred,
                          f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> norm_unit(const card::CardConfig&) {
    return std::make_shared<Norm>();
}

} // namespace cardsim::sim::units
