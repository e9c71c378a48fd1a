#pragma once
// Which bytes of a per-sequence store a command moves: a sequence's cache holds each kv head's
// `max_positions` rows one after another (kernels::cache_append); an append writes each sequence's
// new row of every head, an attention reads each sequence's attended positions of every head; a
// recurrent state or window is moved whole, once per run of rows of one sequence. Under slots each
// row's sequence is its slot's (kernels::store_of_row), so the bytes are that slot's addresses.

#include "sim/units/unit.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::sim::units {

/// The shape of a cache operand as a command sees it.
struct CacheShape {
    std::uint64_t operand_bytes = 0; ///< the whole operand: every sequence's cache
    std::uint64_t rows = 0;          ///< token rows, grouped by sequence (kernels::sequence_of_row)
    std::uint64_t kv_heads = 0;
    std::uint64_t row_bytes = 0; ///< one head row in the cache's keep format
    std::uint64_t max_positions = 0;
    std::span<const std::uint32_t> slots; ///< each row's store sequence (empty: by its index)
};

/// The spans of the rows at positions `first(p) ..= p` of every head of every sequence, where `p`
/// is the sequence's position and `first(p)` is `p` for an append (`window` ignored) or the
/// window's first position for an attention (`window` 0: position 0). Spans past the operand are
/// left out, and so are rows whose slot is past the store (the host refuses them first).
std::vector<Span> cache_rows(const CacheShape& shape, std::span<const std::uint32_t> positions, bool append,
                             std::uint64_t window);

/// The spans of a recurrent store (a Gated-DeltaNet state, a convolution window; `per_seq` bytes a
/// sequence) that `rows` rows move: without `slots` the whole operand (every sequence's part is
/// read and written), with slots each run of consecutive rows of one slot its sequence's part once
/// (the unit keeps it while the run's rows step through it). Slots past the store are left out.
std::vector<Span> sequence_spans(std::uint64_t operand_bytes, std::uint64_t per_seq, std::uint64_t rows,
                                 std::span<const std::uint32_t> slots);

} // namespace cardsim::sim::units
