#include "sim/memory/request_buffer.hpp"

namespace cardsim::sim::memory {

RequestBuffer::RequestBuffer(std::uint32_t banks, std::uint32_t bank_depth, std::uint32_t write_capacity)
    : bank_order_(std::size_t{banks} * (bank_depth + write_capacity), none), bank_count_(banks, 0),
      bank_room_(bank_depth + write_capacity), bank_entries_(banks, 0), per_bank_(banks), ref_row_(banks, 0),
      off_row_(banks, 0), bank_depth_(bank_depth), write_capacity_(write_capacity) {
    pool_.resize(std::size_t{banks} * bank_depth + write_capacity);
    clear();
}

void RequestBuffer::clear() {
    free_.clear();
    for (std::size_t i = pool_.size(); i-- > 0;)
        free_.push_back(static_cast<std::int32_t>(i));
    std::fill(bank_count_.begin(), bank_count_.end(), 0);
    std::fill(bank_entries_.begin(), bank_entries_.end(), 0);
    for (auto& c : per_bank_)
        c = {0, 0};
    std::fill(off_row_.begin(), off_row_.end(), 0);
    dir_head_ = dir_tail_ = {none, none};
    queued_ = {0, 0};
    blocked_ = {0, 0};
    mask_ = {0, 0};
}

std::uint32_t RequestBuffer::recount_off_row(std::uint32_t bank, std::uint32_t row) const {
    std::uint32_t n = 0;
    for (const std::int32_t i : in_bank(bank))
        n += pool_[static_cast<std::size_t>(i)].row != row ? 1 : 0;
    ref_row_[bank] = row;
    off_row_[bank] = n;
    return n;
}

} // namespace cardsim::sim::memory
