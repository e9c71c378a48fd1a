// The cache append unit: writes each sequence's new key or value row of every kv head into its
// cache (the row's slot's, under slots) at the row's position, in the knob point's keep format.

#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "sim/units/cache_rows.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class CacheAppend final : public UnitOf<program::slots::CacheAppend> {
    using S = program::slots::CacheAppend; ///< the command slots this unit reads

public:
    explicit CacheAppend(const card::CardConfig& config)
        : UnitOf(card::UnitKind::CacheAppend), cache_(config.numerics.cache) {}

    /// Elements: rows · kv_heads · head_dim.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.kv_heads * d.head_dim;
    }

    std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const override {
        if (k != program::at(S::Operand::cache)) return Unit::traffic(c, k, step);
        auto d = program::args<S>(c).dims;
        CacheShape shape{c.operands[k].bytes, d.rows,
                         d.kv_heads,          kernels::cache_row_bytes(cache_, d.head_dim),
                         d.max_positions,     slots_of<S>(c, step)};
        return cache_rows(shape, step.positions, true, 0);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::cache_append(f32s(o.x), d.kv_heads, d.head_dim, d.max_positions, cache_,
                              u32s(o.positions).first(d.rows), o.cache, u32s(o.slots));
    }

private:
    numerics::CacheFormat cache_;
};

} // namespace

std::shared_ptr<const Unit> cache_append_unit(const card::CardConfig& config) {
    return std::make_shared<CacheAppend>(config);
}

} // namespace cardsim::sim::units
