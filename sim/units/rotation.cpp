// The rotation unit: NeoX rotary embedding in place on the first `rotary_dim` of every head; with
// `units.rotation.yarn` also by a table of frequencies with cos and sin scaled (YaRN).

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Rotation final : public UnitOf<program::slots::Rotate, program::slots::RotateScaled> {
    using S = program::slots::Rotate;       ///< the command slots this unit reads
    using Y = program::slots::RotateScaled; ///< and of a YaRN rotation

public:
    Rotation() : UnitOf(card::UnitKind::Rotation) {}

    /// Rotated elements: rows · heads · rotary_dim.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        if (c.opcode == Y::opcode) {
            auto d = program::args<Y>(c).dims;
            return d.rows * d.heads * d.rotary_dim;
        }
        auto d = program::args<S>(c).dims;
        return d.rows * d.heads * d.rotary_dim;
    }

    void compute(const program::Command& c, Operands operands) const override {
        if (c.opcode == Y::opcode) {
            auto [_, d, p] = program::args<Y>(c);
            auto o = program::each<Y>(operands);
            kernels::rotate_scaled(f32s(o.x), d.heads * d.head_dim, d.head_dim, d.rotary_dim, f32s(o.freqs),
                                   static_cast<float>(p.scale), u32s(o.positions).first(d.rows));
            return;
        }
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::rotate(f32s(o.x), d.heads * d.head_dim, d.head_dim, d.rotary_dim, p.theta,
                        u32s(o.positions).first(d.rows));
    }
};

} // namespace

std::shared_ptr<const Unit> rotation_unit(const card::CardConfig&) {
    return std::make_shared<Rotation>();
}

} // namespace cardsim::sim::units
