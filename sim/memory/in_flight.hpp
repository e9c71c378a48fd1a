#pragma once
// The completion times of the requests a player has in flight, earliest first.

#include "sim/memory/memory_clock.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace cardsim::sim::memory {

/// A bounded set of completion cycles kept sorted in a ring. A new completion is almost always
/// the latest (memory answers roughly in order), so insertion is nearly O(1); taking the earliest
/// is O(1). Storage is sized once by `reset`; nothing is allocated per request.
class InFlight {
public:
    /// Empties the set and sizes it for `capacity` entries.
    void reset(std::uint32_t capacity) {
        ring_.assign(std::bit_ceil(std::max<std::uint32_t>(capacity, 1)), 0);
        mask_ = static_cast<std::uint32_t>(ring_.size()) - 1;
        head_ = 0;
        size_ = 0;
    }
    std::uint32_t size() const { return size_; }
    /// Removes and returns the earliest completion (the set must not be empty).
    Cycle pop_earliest() {
        const Cycle v = ring_[head_];
        head_ = (head_ + 1) & mask_;
        --size_;
        return v;
    }
    /// Adds a completion (the set must not be full).
    void insert(Cycle v) {
        std::uint32_t i = size_;
        while (i > 0 && ring_[(head_ + i - 1) & mask_] > v) {
            ring_[(head_ + i) & mask_] = ring_[(head_ + i - 1) & mask_];
            --i;
        }
        ring_[(head_ + i) & mask_] = v;
        ++size_;
    }

private:
    std::vector<Cycle> ring_;
    std::uint32_t mask_ = 0;
    std::uint32_t head_ = 0;
    std::uint32_t size_ = 0;
};

} // namespace cardsim::sim::memory
