// The RoPE unit (optional): rotary embedding in place on the q and k parts of fused qkv rows.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class Rope final : public UnitOf<program::slots::Rope> {
    using S = program::slots::Rope; ///< the command slots this unit reads

public:
    Rope() : UnitOf(card::UnitKind::Rope) {}

    /// Rotated elements: rows · 2 · heads · head_dim (q and k).
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * 2 * d.heads * d.head_dim;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::rope(f32s(o.x), d.heads, d.head_dim, p.theta, u32s(o.positions).first(d.rows));
    }
};

} // namespace

std::shared_ptr<const Unit> rope_unit(const card::CardConfig&) {
    return std::make_shared<Rope>();
}

} // namespace cardsim::sim::units
