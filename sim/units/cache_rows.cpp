#include "sim/units/cache_rows.hpp"

#include "engine/kernels/kernels.hpp"

namespace cardsim::sim::units {

std::vector<Span> cache_rows(const CacheShape& s, std::span<const std::uint32_t> positions, bool append,
                             std::uint64_t window) {
    std::vector<Span> spans;
    const std::uint64_t per_seq = s.kv_heads * s.max_positions * s.row_bytes;
    for (std::uint64_t r = 0; r < s.rows; ++r) {
        const std::uint64_t base = kernels::sequence_of_row(s.operand_bytes, per_seq, s.rows, r).offset;
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

} // namespace cardsim::sim::units
