#include "sim/memory/scheduler_frfcfs.hpp"

#include <algorithm>

namespace cardsim::sim::memory {

SchedulerFrFcfs::SchedulerFrFcfs(RequestBuffer& buffer, std::uint32_t starvation_limit,
                                 std::uint32_t high_watermark, std::uint32_t low_watermark,
                                 std::uint32_t stagger_horizon)
    : buffer_(buffer), limit_(starvation_limit), high_(std::max<std::uint32_t>(high_watermark, 1)),
      low_(std::min(low_watermark, high_ - 1)), stagger_(stagger_horizon > 0),
      horizon_(std::min(stagger_horizon, max_urgency - 1)) {}

Direction SchedulerFrFcfs::serving() {
    const std::uint32_t writes = buffer_.queued(Direction::Write);
    const std::uint32_t ready_writes = writes - buffer_.blocked(Direction::Write);
    const std::uint32_t ready_reads = buffer_.queued(Direction::Read) - buffer_.blocked(Direction::Read);
    if (buffer_.write_capacity() == 0) { // not posted: the oldest burst's direction
        const std::int32_t r = buffer_.oldest(Direction::Read), w = buffer_.oldest(Direction::Write);
        if (r == RequestBuffer::none) return Direction::Write;
        if (w == RequestBuffer::none) return Direction::Read;
        return buffer_[r].seq < buffer_[w].seq ? Direction::Read : Direction::Write;
    }
    if (draining_ && (ready_writes == 0 || writes <= low_)) draining_ = false;
    if (!draining_ && writes >= high_ && ready_writes > 0) {
        draining_ = true;
        ++batches_;
    }
    if (draining_ || ready_reads == 0) return Direction::Write;
    if (buffer_.blocked(Direction::Read) > 0 && ready_writes > 0) return Direction::Write;
    return Direction::Read;
}

std::int32_t SchedulerFrFcfs::next_request(const BankMachine& bank) const {
    std::int32_t oldest = RequestBuffer::none;
    for (std::int32_t i = buffer_.oldest_in_bank(bank.bank); i != RequestBuffer::none; i = buffer_[i].next) {
        const QueuedBurst& e = buffer_[i];
        if (e.accept > bank.decision) break; // entered later (admission is in order): not visible yet
        if (e.direction != bank.direction || e.blocker != RequestBuffer::none) continue;
        if (oldest == RequestBuffer::none) {
            oldest = i;
            if (e.passed >= limit_) return i; // starved: served next
        }
        if (bank.open && e.row == bank.row) return i; // the oldest row hit
    }
    return oldest;
}

std::int32_t SchedulerFrFcfs::next_request_after_push(const BankMachine& bank, std::int32_t previous,
                                                      std::int32_t added) const {
    // next_request's scan reaches the youngest burst only when it found neither a row hit nor a
    // starved oldest burst (`previous` is then the oldest, its answer at the end of the scan).
    const QueuedBurst& p = buffer_[previous];
    if ((bank.open && p.row == bank.row) || p.passed >= limit_) return previous;
    const QueuedBurst& e = buffer_[added];
    // Admission is in order: when the youngest is visible, so is every burst before it.
    if (e.accept > bank.decision) return previous;
    return bank.open && e.row == bank.row ? added : previous;
}

std::uint32_t SchedulerFrFcfs::switch_urgency(const BankMachine& bank, std::int32_t entry) const {
    if (!stagger_ || !bank.open || buffer_[entry].row != bank.row) return 0; // not a row hit
    if (buffer_.off_row(bank.bank, bank.row) == 0) return 0; // no other row: no switch pending
    // The bursts next_request sees: the open row's hits, and whether any other row waits (the
    // most passed of those bounds the hits left before the starvation cap forces the switch).
    std::uint32_t hits = 0, passed = 0;
    bool other = false;
    for (std::int32_t i = buffer_.oldest_in_bank(bank.bank); i != RequestBuffer::none; i = buffer_[i].next) {
        const QueuedBurst& e = buffer_[i];
        if (e.accept > bank.decision) break; // not visible yet
        if (e.direction != bank.direction || e.blocker != RequestBuffer::none) continue;
        if (e.row == bank.row) {
            ++hits;
        } else {
            other = true;
            passed = std::max(passed, e.passed);
        }
    }
    return urgency_of(hits, other, passed);
}

std::int32_t SchedulerFrFcfs::next_request_ranked(const BankMachine& bank, std::uint32_t& urgency) const {
    urgency = 0;
    if (!stagger_ || !bank.open) return next_request(bank); // no row hit: urgency 0
    // next_request and switch_urgency in one pass: the oldest burst, the oldest row hit, and what
    // switch_urgency counts.
    std::int32_t oldest = RequestBuffer::none, hit = RequestBuffer::none;
    std::uint32_t hits = 0, passed = 0;
    bool other = false;
    for (std::int32_t i = buffer_.oldest_in_bank(bank.bank); i != RequestBuffer::none; i = buffer_[i].next) {
        const QueuedBurst& e = buffer_[i];
        if (e.accept > bank.decision) break; // not visible yet
        if (e.direction != bank.direction || e.blocker != RequestBuffer::none) continue;
        if (oldest == RequestBuffer::none) oldest = i;
        if (e.row == bank.row) {
            if (hits++ == 0) hit = i;
        } else {
            other = true;
            passed = std::max(passed, e.passed);
        }
    }
    if (oldest == RequestBuffer::none) return oldest;
    // The starved oldest burst goes first, else the oldest row hit, else the oldest.
    const std::int32_t entry = buffer_[oldest].passed >= limit_ ? oldest
                               : hit != RequestBuffer::none     ? hit
                                                                : oldest;
    if (buffer_[entry].row == bank.row) urgency = urgency_of(hits, other, passed);
    return entry;
}

bool SchedulerFrFcfs::has_further_row_hit(std::uint32_t bank, std::uint32_t row, Direction direction,
                                          std::int32_t except) const {
    for (std::int32_t i = buffer_.oldest_in_bank(bank); i != RequestBuffer::none; i = buffer_[i].next)
        if (i != except && buffer_[i].direction == direction && buffer_[i].row == row) return true;
    return false;
}

void SchedulerFrFcfs::served(std::int32_t i) {
    const QueuedBurst& s = buffer_[i];
    for (std::int32_t j = buffer_.oldest_in_bank(s.bank); j != i; j = buffer_[j].next) {
        QueuedBurst& e = buffer_[j];
        if (e.direction == s.direction && e.blocker == RequestBuffer::none) ++e.passed;
    }
}

} // namespace cardsim::sim::memory
