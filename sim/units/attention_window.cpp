// The windowed attention unit: self attention within each sequence of the bucket (the encoder's),
// every row over its sequence or its window of neighbours.

#include "engine/kernels/kernels.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

#include <algorithm>

namespace cardsim::sim::units {
namespace {

class AttentionWindow final : public UnitOf<program::slots::SelfAttention> {
    using S = program::slots::SelfAttention; ///< the command slots this unit reads

public:
    AttentionWindow() : UnitOf(card::UnitKind::AttentionWindow) {}

    /// Cache elements as the attention unit counts them, for the bucket's worst case: every row
    /// attends its whole sequence (rows / seqs, rounded up) or its `2 · window + 1` neighbours.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        const std::uint64_t seqs = std::max<std::uint64_t>(d.seqs, 1), per_seq = (d.rows + seqs - 1) / seqs,
                            len = d.window ? std::min(per_seq, 2 * d.window + 1) : per_seq;
        return d.rows * d.heads * 2 * len * d.head_dim;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        kernels::self_attention(f32s(o.qkv), d.heads, d.head_dim, d.window,
                                u32s(o.seq_starts).first(d.seqs + 1), f32s(o.out));
    }
};

} // namespace

std::shared_ptr<const Unit> attention_window_unit(const card::CardConfig&) {
    return std::make_shared<AttentionWindow>();
}

} // namespace cardsim::sim::units
