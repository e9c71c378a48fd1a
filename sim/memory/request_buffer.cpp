#include "sim/memory/request_buffer.hpp"

namespace cardsim::sim::memory {

RequestBuffer::RequestBuffer(std::uint32_t banks, std::uint32_t bank_depth, std::uint32_t write_capacity)
    : bank_head_(banks, none), bank_tail_(banks, none), bank_entries_(banks, 0), per_bank_(banks),
      bank_depth_(bank_depth), write_capacity_(write_capacity) {
    pool_.resize(std::size_t{banks} * bank_depth + write_capacity);
    clear();
}

void RequestBuffer::clear() {
    free_.clear();
    for (std::size_t i = pool_.size(); i-- > 0;)
        free_.push_back(static_cast<std::int32_t>(i));
    std::fill(bank_head_.begin(), bank_head_.end(), none);
    std::fill(bank_tail_.begin(), bank_tail_.end(), none);
    std::fill(bank_entries_.begin(), bank_entries_.end(), 0);
    for (auto& c : per_bank_)
        c = {0, 0};
    dir_head_ = dir_tail_ = {none, none};
    queued_ = {0, 0};
    blocked_ = {0, 0};
    mask_ = {0, 0};
}

std::int32_t RequestBuffer::push(const QueuedBurst& burst) {
    const std::int32_t i = free_.back();
    free_.pop_back();
    QueuedBurst& e = pool_[static_cast<std::size_t>(i)];
    e = burst;
    const std::uint32_t b = e.bank;
    const std::size_t d = index(e.direction);
    e.prev = bank_tail_[b];
    e.next = none;
    if (e.prev != none)
        pool_[static_cast<std::size_t>(e.prev)].next = i;
    else
        bank_head_[b] = i;
    bank_tail_[b] = i;
    e.dprev = dir_tail_[d];
    e.dnext = none;
    if (e.dprev != none)
        pool_[static_cast<std::size_t>(e.dprev)].dnext = i;
    else
        dir_head_[d] = i;
    dir_tail_[d] = i;
    if (e.direction == Direction::Read || write_capacity_ == 0) ++bank_entries_[b];
    ++per_bank_[b][d];
    ++queued_[d];
    mask_[d] |= std::uint64_t{1} << b;
    return i;
}

void RequestBuffer::erase(std::int32_t i) {
    QueuedBurst& e = pool_[static_cast<std::size_t>(i)];
    const std::uint32_t b = e.bank;
    const std::size_t d = index(e.direction);
    if (e.prev != none)
        pool_[static_cast<std::size_t>(e.prev)].next = e.next;
    else
        bank_head_[b] = e.next;
    if (e.next != none)
        pool_[static_cast<std::size_t>(e.next)].prev = e.prev;
    else
        bank_tail_[b] = e.prev;
    if (e.dprev != none)
        pool_[static_cast<std::size_t>(e.dprev)].dnext = e.dnext;
    else
        dir_head_[d] = e.dnext;
    if (e.dnext != none)
        pool_[static_cast<std::size_t>(e.dnext)].dprev = e.dprev;
    else
        dir_tail_[d] = e.dprev;
    if (e.blocker != none) --blocked_[d];
    if (e.direction == Direction::Read || write_capacity_ == 0) --bank_entries_[b];
    if (--per_bank_[b][d] == 0) mask_[d] &= ~(std::uint64_t{1} << b);
    --queued_[d];
    free_.push_back(i);
}

} // namespace cardsim::sim::memory
