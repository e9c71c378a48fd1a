// The marker gather unit (optional): copies each marker's token row out of the hidden rows.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class GatherMarkers final : public UnitOf<program::slots::GatherMarkers> {
    using S = program::slots::GatherMarkers; ///< the command slots this unit reads

public:
    GatherMarkers() : UnitOf(card::UnitKind::GatherMarkers) {}

    /// Elements: markers · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.markers * d.width;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::gather_markers(f32s(o.h), d.width, u32s(o.marker_rows).first(d.markers), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> gather_markers_unit(const card::CardConfig&) {
    return std::make_shared<GatherMarkers>();
}

} // namespace cardsim::sim::units
