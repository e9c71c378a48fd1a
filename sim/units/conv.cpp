// The conv unit: the depthwise causal convolution of each row over its sequence's window (the
// window kept in the state region; the row's slot's, under slots), with the SiLU when the command fuses it.

#include "engine/kernels/kernels.hpp"
#include "sim/units/cache_rows.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Conv final : public UnitOf<program::slots::Conv> {
    using S = program::slots::Conv; ///< the command slots this unit reads

public:
    Conv() : UnitOf(card::UnitKind::Conv) {}

    /// Channels: rows · channels.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.channels;
    }

    /// The window: the whole operand, or each run of one slot's rows its slot's window once.
    std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const override {
        if (k != program::at(S::Operand::window)) return Unit::traffic(c, k, step);
        auto d = program::args<S>(c).dims;
        return sequence_spans(c.operands[k].bytes, 4 * d.channels * (d.kernel ? d.kernel - 1 : 0), d.rows,
                              slots_of<S>(c, step));
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::conv(f32s(o.x), f32s(o.w), d.channels, d.kernel, c.flags & program::flag::FusedSilu,
                      o.window, f32s(o.out), u32s(o.slots), u32s(o.positions));
    }
};

} // namespace

std::shared_ptr<const Unit> conv_unit(const card::CardConfig&) {
    return std::make_shared<Conv>();
}

} // namespace cardsim::sim::units
