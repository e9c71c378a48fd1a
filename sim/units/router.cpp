// The router unit of a mixture of experts: a route (each row's exact top-k of its router logits and
// the family's normalisation, numerics/router.hpp) writes the chosen experts and their weights on
// chip; a combine (numerics/combine.hpp) sums the chosen experts' outputs under their weights, and
// the shared expert's under its sigmoid gate, exactly, into the row.

#include "engine/kernels/experts.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

using R = program::slots::Route;
using C = program::slots::Combine;

class Router final : public UnitOf<R, C> {
public:
    Router() : UnitOf(card::UnitKind::Router) {}

    /// A route: logits scanned, rows · experts. A combine: products summed, rows · top_k · width
    /// (and rows · width more for a shared expert).
    std::uint64_t work(const program::Command& c, const Step&) const override {
        if (c.opcode == R::opcode) {
            auto d = program::args<R>(c).dims;
            return d.rows * d.experts;
        }
        auto a = program::args<C>(c);
        const bool shared = a.operands.shared.region != program::Region::None;
        return a.dims.rows * (a.dims.top_k + (shared ? 1 : 0)) * a.dims.width;
    }

    void compute(const program::Command& c, Operands operands) const override {
        if (c.opcode == R::opcode) {
            auto d = program::args<R>(c).dims;
            auto o = program::each<R>(operands);
            std::span<std::uint32_t> chosen{reinterpret_cast<std::uint32_t*>(o.experts.data()),
                                            o.experts.size() / 4};
            kernels::route(f32s(o.logits), d.experts,
                           d.all ? numerics::RouterNorm::All : numerics::RouterNorm::TopK, chosen,
                           f32s(o.weights));
            return;
        }
        auto d = program::args<C>(c).dims;
        auto o = program::each<C>(operands);
        if (c.flags & program::flag::Partial) // an expert-parallel card's exact parts
            kernels::combine_partial(f32s(o.weights), f32s(o.outs), f32s(o.shared), f32s(o.gate), d.top_k,
                                     o.out);
        else
            kernels::combine(f32s(o.weights), f32s(o.outs), f32s(o.shared), f32s(o.gate), d.top_k,
                             f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> router_unit(const card::CardConfig&) {
    return std::make_shared<Router>();
}

} // namespace cardsim::sim::units
