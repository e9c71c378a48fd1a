// The embed unit: looks each token row's id up in the packed table and dequantises that row.

#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/packed.hpp"
#include "sim/units/unit_of.hpp"

#include <algorithm>

namespace cardsim::sim::units {
namespace {

class Embed final : public UnitOf<program::slots::Embed> {
    using S = program::slots::Embed; ///< the command slots this unit reads

public:
    explicit Embed(const card::CardConfig& config) : UnitOf(card::UnitKind::Embed), config_(config) {}

    /// Elements: rows · width.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return rows_times_width<S>(c);
    }

    /// A lookup reads one table row per token row. Timing is data-independent (a timing-only run
    /// has no token ids), so the rows are timed as the table's first rows.
    std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const override {
        if (k != program::at(S::Operand::table)) return Unit::traffic(c, k, step);
        auto d = program::args<S>(c).dims;
        const std::uint64_t stride = kernels::matrix_layout(config_, 1, d.width).row_stride();
        return {Span{0, std::min(c.operands[k].bytes, d.rows * stride)}};
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::embed(packed_matrix(config_, o.table, 0, d.width), u32s(o.ids).first(d.rows), f32s(o.out));
    }

private:
    card::CardConfig config_;
};

} // namespace

std::shared_ptr<const Unit> embed_unit(const card::CardConfig& config) {
    return std::make_shared<Embed>(config);
}

} // namespace cardsim::sim::units
