#include "sim/units/cache_rows.hpp"

#include "engine/error.hpp"
#include "engine/kernels/kernels.hpp"

namespace cardsim::sim::units {

std::vector<Span> cache_rows(const CacheShape& s, std::span<const std::uint32_t> positions, bool append,
                             std::uint64_t window) {
    std::vector<Span> spans;
    const std::uint64_t per_seq = s.kv_heads * s.max_positions * s.row_bytes;
    for (std::uint64_t r = 0; r < s.rows; ++r) {
        std::uint64_t base = 0;
        try {
            base = kernels::store_of_row(s.operand_bytes, per_seq, s.rows, s.slots, r).offset;
        } catch (const Error&) {
            continue; // a slot past the store moves nothing (the host refused it before the step)
        }
        std::uint64_t last = r < positions.size() ? positions[r] : 0;
        std::uint64_t first = append ? last : (window && last + 1 > window ? last + 1 - window : 0);
        for (std::uint64_t h = 0; h < s.kv_heads; ++h) {
            std::uint64_t begin = base + (h * s.max_positions + first) * s.row_bytes,
                          bytes = (last - first + 1) * s.row_bytes;
            if (begin + bytes <= s.operand_bytes) spans.push_back(Span{begin, bytes});
        }
    }
    return spans;
}

std::vector<Span> sequence_spans(std::uint64_t operand_bytes, std::uint64_t per_seq, std::uint64_t rows,
                                 std::span<const std::uint32_t> slots) {
    if (slots.empty()) return {Span{0, operand_bytes}};
    std::vector<Span> spans;
    for (std::uint64_t r = 0; r < rows && r < slots.size(); ++r) {
        if (r > 0 && slots[r] == slots[r - 1]) continue; // the run's sequence is moved once
        try {
            auto at = kernels::store_of_row(operand_bytes, per_seq, rows, slots, r);
            spans.push_back(Span{at.offset, at.bytes});
        } catch (const Error&) {
            // a slot past the store moves nothing (the host refused it before the step)
        }
    }
    return spans;
}

} // namespace cardsim::sim::units
