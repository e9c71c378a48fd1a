// The attention unit: one query row per sequence (per row over its slot's, under slots) over its cache
// (`vector` or `array` math as the knob point says), reading only the attended positions of the keys and
// values.

#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "sim/units/cache_rows.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

#include <algorithm>

namespace cardsim::sim::units {
namespace {

class Attention final : public UnitOf<program::slots::Attend> {
    using S = program::slots::Attend; ///< the command slots this unit reads

public:
    explicit Attention(const card::CardConfig& config)
        : UnitOf(card::UnitKind::Attention), numerics_(config.numerics),
          query_(kernels::attention_query_scheme(config.numerics)) {}

    /// Cache elements: per row and query head, the keys and values of every attended position
    /// (2 · positions · head_dim); a row attends `min(pos + 1, window)` positions.
    std::uint64_t work(const program::Command& c, const Step& step) const override {
        auto d = program::args<S>(c).dims;
        std::uint64_t total = 0;
        for (std::uint64_t r = 0; r < d.rows; ++r) {
            std::uint64_t len = (r < step.positions.size() ? step.positions[r] : 0) + 1;
            if (d.window) len = std::min(len, d.window);
            total += d.heads * 2 * len * d.head_dim;
        }
        return total;
    }

    std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const override {
        if (k != program::at(S::Operand::keys) && k != program::at(S::Operand::values))
            return Unit::traffic(c, k, step);
        auto d = program::args<S>(c).dims;
        CacheShape shape{c.operands[k].bytes, d.rows,
                         d.kv_heads,          kernels::cache_row_bytes(numerics_.cache, d.head_dim),
                         d.max_positions,     slots_of<S>(c, step)};
        return cache_rows(shape, step.positions, false, d.window);
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto [_, d, p] = program::args<S>(c);
        auto o = program::each<S>(operands);
        kernels::attend(f32s(o.q), d.heads, d.kv_heads, d.head_dim, d.max_positions, d.window, p.scale,
                        p.softcap, f32s(o.sinks), numerics_.cache, numerics_.attention, query_,
                        u32s(o.positions).first(d.rows), o.keys, o.values, f32s(o.out), u32s(o.slots));
    }

private:
    numerics::EngineNumerics numerics_;
    numerics::Scheme query_;
};

} // namespace

std::shared_ptr<const Unit> attention_unit(const card::CardConfig& config) {
    return std::make_shared<Attention>(config);
}

} // namespace cardsim::sim::units
