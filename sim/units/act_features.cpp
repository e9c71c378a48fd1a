// The activation features unit (optional): the encoder's act head features per sequence.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class ActFeatures final : public UnitOf<program::slots::ActFeatures> {
    using S = program::slots::ActFeatures; ///< the command slots this unit reads

public:
    ActFeatures() : UnitOf(card::UnitKind::ActFeatures) {}

    /// Elements: seqs · (width + 4) + markers.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.seqs * (d.width + 4) + d.markers;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::act_features(f32s(o.h), d.width, f32s(o.logits), u32s(o.seq_starts).first(d.seqs + 1),
                              u32s(o.marker_starts).first(d.seqs + 1), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> act_features_unit(const card::CardConfig&) {
    return std::make_shared<ActFeatures>();
}

} // namespace cardsim::sim::units
