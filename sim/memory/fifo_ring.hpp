#pragma once
// A first-in first-out queue in a ring that grows by doubling: after warm-up, pushing and popping
// allocate nothing (std::deque allocates and frees a block every few hundred elements).

#include <bit>
#include <cstdint>
#include <vector>

namespace cardsim::sim::memory {

/// A FIFO of trivially copyable values in a power-of-two ring.
template <class T>
class FifoRing {
public:
    bool empty() const { return size_ == 0; }
    std::uint32_t size() const { return size_; }
    /// The oldest value (the queue must not be empty).
    const T& front() const { return ring_[head_]; }
    void push_back(const T& v) {
        if (size_ == ring_.size()) grow();
        ring_[(head_ + size_) & mask_] = v;
        ++size_;
    }
    /// Removes the oldest value (the queue must not be empty).
    void pop_front() {
        head_ = (head_ + 1) & mask_;
        --size_;
    }
    void clear() {
        head_ = 0;
        size_ = 0;
    }

private:
    void grow() {
        std::vector<T> bigger(ring_.empty() ? 64 : ring_.size() * 2);
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

} // namespace cardsim::sim::memory
