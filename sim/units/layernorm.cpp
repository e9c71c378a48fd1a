// The LayerNorm unit (optional): `(x − mean) · rsqrt(var + eps) · w + b` of each row.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class LayerNorm final : public UnitOf<program::slots::LayerNorm> {
    using S = program::slots::LayerNorm; ///< the command slots this unit reads

public:
    LayerNorm() : UnitOf(card::UnitKind::LayerNorm) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::layer_norm(f32s(o.x), f32s(o.w), f32s(o.b), d.width, p.eps, f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> layernorm_unit(const card::CardConfig&) {
    return std::make_shared<LayerNorm>();
}

} // namespace cardsim::sim::units
