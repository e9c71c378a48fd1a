#pragma once
// Completions kept earliest first: those of the requests a player has in flight, or those a
// controller has served and not yet handed over.

#include "sim/memory/memory_clock.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace cardsim::sim::memory {

/// A set of values ordered by `key(value)` (a completion cycle), kept sorted in a ring. A new
/// value is almost always the latest (memory answers roughly in order), so insertion is nearly
/// O(1); taking the earliest is O(1). The ring doubles when full, so after warm-up nothing is
/// allocated per value.
template <class T, class Key>
class SortedRing {
public:
    /// Empties the set and sizes it for `capacity` values.
    void reset(std::uint32_t capacity) {
        ring_.assign(std::bit_ceil(std::max<std::uint32_t>(capacity, 1)), T{});
        mask_ = static_cast<std::uint32_t>(ring_.size()) - 1;
        head_ = 0;
        size_ = 0;
    }
    std::uint32_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    /// The earliest value (the set must not be empty).
    const T& earliest() const { return ring_[head_]; }
    /// Removes and returns the earliest value (the set must not be empty).
    T pop_earliest() {
        const T v = ring_[head_];
        head_ = (head_ + 1) & mask_;
        --size_;
        return v;
    }
    /// Adds a value.
    void insert(const T& v) {
        if (size_ == ring_.size()) grow();
        const Key key{};
        std::uint32_t i = size_;
        while (i > 0 && key(ring_[(head_ + i - 1) & mask_]) > key(v)) {
            ring_[(head_ + i) & mask_] = ring_[(head_ + i - 1) & mask_];
            --i;
        }
        ring_[(head_ + i) & mask_] = v;
        ++size_;
    }

private:
    void grow() {
        std::vector<T> bigger(std::max<std::size_t>(ring_.size() * 2, 1));
        for (std::uint32_t i = 0; i < size_; ++i)
            bigger[i] = ring_[(head_ + i) & mask_];
        ring_ = std::move(bigger);
        mask_ = static_cast<std::uint32_t>(ring_.size()) - 1;
        head_ = 0;
    }

    std::vector<T> ring_;
    std::uint32_t mask_ = 0;
    std::uint32_t head_ = 0;
    std::uint32_t size_ = 0;
};

/// A completion cycle is its own key.
struct CycleKey {
    Cycle operator()(Cycle c) const { return c; }
};

/// The completion cycles of the requests a player has in flight, earliest first.
using InFlight = SortedRing<Cycle, CycleKey>;

} // namespace cardsim::sim::memory
