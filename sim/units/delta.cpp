// The delta-rule unit: one Gated-DeltaNet state step per sequence (per row on its slot's, under slots)
// (decay, delta-rule write, read out), the state kept in the knob point's format.

#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/numerics/keep.hpp"
#include "sim/units/cache_rows.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Delta final : public UnitOf<program::slots::DeltaStep> {
    using S = program::slots::DeltaStep; ///< the command slots this unit reads

public:
    explicit Delta(const card::CardConfig& config)
        : UnitOf(card::UnitKind::Delta), state_(config.numerics.state) {}

    /// State elements: rows · value heads · dk · dv.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.value_heads * d.dk * d.dv;
    }

    /// The state: the whole operand, or each run of one slot's rows its slot's state once.
    std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const override {
        if (k != program::at(S::Operand::state)) return Unit::traffic(c, k, step);
        auto d = program::args<S>(c).dims;
        const std::uint64_t per_seq =
            d.value_heads * numerics::kept_bytes(kernels::state_keep(state_), d.dk * d.dv);
        return sequence_spans(c.operands[k].bytes, per_seq, d.rows, slots_of<S>(c, step));
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::delta_step(f32s(o.q), f32s(o.k), f32s(o.v), f32s(o.beta), f32s(o.g), d.key_heads,
                            d.value_heads, d.dk, d.dv, state_, o.state, f32s(o.out), u32s(o.slots),
                            u32s(o.positions));
    }

private:
    numerics::StateFormat state_;
};

} // namespace

std::shared_ptr<const Unit> delta_unit(const card::CardConfig& config) {
    return std::make_shared<Delta>(config);
}

} // namespace cardsim::sim::units
