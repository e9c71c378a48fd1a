// The gated norm unit: RMSNorm of each group times its weight, gated by `silu(z)`.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class GatedNorm final : public UnitOf<program::slots::GatedNorm> {
    using S = program::slots::GatedNorm; ///< the command slots this unit reads

public:
    GatedNorm() : UnitOf(card::UnitKind::GatedNorm) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::gated_norm(f32s(o.x), f32s(o.z), f32s(o.w), d.group, p.eps, f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> gated_norm_unit(const card::CardConfig&) {
    return std::make_shared<GatedNorm>();
}

} // namespace cardsim::sim::units
