// The conv unit: the depthwise causal convolution of each row over its sequence's window (the
// window kept in the state region), with the SiLU when the command fuses it.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

using S = program::slots::Conv;

class Conv final : public UnitOf<program::slots::Conv> {
public:
    Conv() : UnitOf(card::UnitKind::Conv) {}

    /// Channels: rows · channels.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.channels;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::conv(f32s(o.x), f32s(o.w), d.channels, d.kernel, c.flags & program::flag::FusedSilu,
                      o.window, f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> conv_unit(const card::CardConfig&) {
    return std::make_shared<Conv>();
}

} // namespace cardsim::sim::units
