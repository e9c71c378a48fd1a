#pragma once
// First ready, first come first served, with read/write grouping and a starvation cap.

#include "sim/memory/scheduler.hpp"

#include <algorithm>
#include <span>

namespace cardsim::sim::memory {

/// FR-FCFS over per-bank queues (DRAMSys' SchedulerFrFcfsGrp with write watermarks, DRAMSim3's
/// FR-FCFS): each bank serves its oldest row hit, else its oldest burst; a burst passed over
/// `starvation_limit` times by younger bursts of its bank is served next (the EMIF's starvation
/// control). Reads and writes are grouped: posted writes wait until `high_watermark` of them are
/// queued, then drain down to `low_watermark` (one bus turnaround per batch); they also go when
/// no read can (idle time, or a read waits for an older write of its line). Without posting
/// (no write queue) the direction of the oldest burst is served.
///
/// With a `stagger_horizon` (`ddr.controller.stagger_row_switches`), of the banks' picks whose
/// column commands can go at the same cycle, the row hit of the bank that must switch rows soonest
/// goes first (`switch_urgency`): a bank that holds bursts of another row has as many hits left as
/// it holds for its open row, or fewer when one of those other bursts nears the starvation cap;
/// banks with at most `stagger_horizon` hits left (the hits a bank serves during one row switch
/// at its share of the bus) go by their hits left, the others after them by age, and a bank with
/// no other row queued before all. So a bank about to switch drains and switches while the others
/// still hold hits to cover it, and the banks' switches spread out rather than fall together.
class SchedulerFrFcfs final : public SchedulerIF {
public:
    SchedulerFrFcfs(RequestBuffer& buffer, std::uint32_t starvation_limit, std::uint32_t high_watermark,
                    std::uint32_t low_watermark, std::uint32_t stagger_horizon = 0);
    bool in_order() const override { return false; }
    Direction serving() override;
    std::int32_t next_request(const BankMachine& bank) const override;
    std::int32_t next_request_after_push(const BankMachine& bank, std::int32_t previous,
                                         std::int32_t added) const override;
    std::uint32_t switch_urgency(const BankMachine& bank, std::int32_t entry) const override;
    std::int32_t next_request_ranked(const BankMachine& bank, std::uint32_t& urgency) const override;
    bool ranks_switches() const override { return stagger_; }
    /// A sole burst is the oldest, and a row hit alone has no switch pending (urgency 0).
    bool picks_sole_burst() const override { return true; }
    bool has_further_row_hit(std::uint32_t bank, std::uint32_t row, Direction direction,
                             std::int32_t except) const override;
    void served(std::int32_t i) override;
    std::uint64_t write_batches() const override { return batches_; }
    void reset() override {
        draining_ = false;
        batches_ = 0;
    }
    bool draining_writes() const override {
        return draining_ && buffer_.queued(Direction::Write) > low_ &&
               buffer_.queued(Direction::Write) > buffer_.blocked(Direction::Write);
    }

private:
    /// Whether every burst of `bank` is of `direction` and not blocked: a pass over the bank then
    /// need not test each burst for them.
    bool uniform(std::uint32_t bank, Direction direction) const {
        const Direction other = direction == Direction::Read ? Direction::Write : Direction::Read;
        return buffer_.queued(bank, other) == 0 && buffer_.blocked(direction) == 0;
    }
    /// The urgency of a row hit whose bank holds `hits` of its row and, when `other`, bursts of
    /// other rows passed over `passed` times at most.
    std::uint32_t urgency_of(std::uint32_t hits, bool other, std::uint32_t passed) const {
        if (!other) return 0; // no switch pending: no reason to keep its hits
        const std::uint32_t left = std::min(hits, limit_ > passed ? limit_ - passed : 1u);
        // A bank that switches within one switch time ranks by its hits left; the others alike, after.
        return std::clamp<std::uint32_t>(left, 1, horizon_ + 1);
    }

    RequestBuffer& buffer_;
    std::uint32_t limit_;
    std::uint32_t high_;
    std::uint32_t low_;
    bool stagger_;
    std::uint32_t horizon_;
    bool draining_ = false;
    std::uint64_t batches_ = 0;
};

// The policy's calls run once per decision or per bank pick: inline, for the controller, which
// calls them directly (the class is final) when its scheduler is FR-FCFS.

inline Direction SchedulerFrFcfs::serving() {
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

inline std::int32_t SchedulerFrFcfs::next_request(const BankMachine& bank) const {
    std::int32_t oldest = RequestBuffer::none;
    for (const std::int32_t i : buffer_.in_bank(bank.bank)) {
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

inline std::int32_t SchedulerFrFcfs::next_request_after_push(const BankMachine& bank, std::int32_t previous,
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

inline std::uint32_t SchedulerFrFcfs::switch_urgency(const BankMachine& bank, std::int32_t entry) const {
    if (!stagger_ || !bank.open || buffer_[entry].row != bank.row) return 0; // not a row hit
    if (buffer_.off_row(bank.bank, bank.row) == 0) return 0; // no other row: no switch pending
    // The bursts next_request sees: the open row's hits, and whether any other row waits (the
    // most passed of those bounds the hits left before the starvation cap forces the switch).
    std::uint32_t hits = 0, passed = 0;
    bool other = false;
    for (const std::int32_t i : buffer_.in_bank(bank.bank)) {
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

inline std::int32_t SchedulerFrFcfs::next_request_ranked(const BankMachine& bank,
                                                         std::uint32_t& urgency) const {
    urgency = 0;
    if (!stagger_ || !bank.open) return next_request(bank); // no row hit: urgency 0
    // next_request and switch_urgency in one pass: the oldest burst, the oldest row hit, and what
    // switch_urgency counts.
    std::int32_t oldest = RequestBuffer::none, hit = RequestBuffer::none;
    std::uint32_t hits = 0, passed = 0;
    bool other = false;
    const std::span<const std::int32_t> queue = buffer_.in_bank(bank.bank);
    if (queue.empty()) return RequestBuffer::none;
    const std::int32_t head = queue.front();
    if (uniform(bank.bank, bank.direction) && buffer_[queue.back()].accept <= bank.decision) {
        // Every burst of the bank counts (admission is in order: the youngest visible, all are):
        // the same pass without its three tests a burst, as streams of one direction fill a bank.
        for (const std::int32_t i : queue) {
            const QueuedBurst& e = buffer_[i];
            const bool row_hit = e.row == bank.row;
            hit = hit == RequestBuffer::none && row_hit ? i : hit;
            hits += row_hit ? 1 : 0;
            passed = std::max(passed, row_hit ? 0u : e.passed);
        }
        const std::int32_t entry = buffer_[head].passed >= limit_ ? head
                                   : hit != RequestBuffer::none   ? hit
                                                                  : head;
        if (buffer_[entry].row == bank.row)
            urgency = urgency_of(hits, hits != buffer_.queued(bank.bank, bank.direction), passed);
        return entry;
    }
    for (const std::int32_t i : queue) {
        const QueuedBurst& e = buffer_[i];
        if (e.accept > bank.decision) break; // not visible yet
        if (e.direction != bank.direction || e.blocker != RequestBuffer::none) continue;
        // Without branches on the row (which of a bank's rows comes next is unpredictable).
        const bool row_hit = e.row == bank.row;
        oldest = oldest == RequestBuffer::none ? i : oldest;
        hit = hit == RequestBuffer::none && row_hit ? i : hit;
        hits += row_hit ? 1 : 0;
        other |= !row_hit;
        passed = std::max(passed, row_hit ? 0u : e.passed);
    }
    if (oldest == RequestBuffer::none) return oldest;
    // The starved oldest burst goes first, else the oldest row hit, else the oldest.
    const std::int32_t entry = buffer_[oldest].passed >= limit_ ? oldest
                               : hit != RequestBuffer::none     ? hit
                                                                : oldest;
    if (buffer_[entry].row == bank.row) urgency = urgency_of(hits, other, passed);
    return entry;
}

inline void SchedulerFrFcfs::served(std::int32_t i) {
    const QueuedBurst& s = buffer_[i];
    const std::int32_t* older = buffer_.in_bank(s.bank).data();
    if (uniform(s.bank, s.direction)) { // every older burst of the bank is passed over
        for (; *older != i; ++older)
            ++buffer_[*older].passed;
        return;
    }
    for (; *older != i; ++older) {
        QueuedBurst& e = buffer_[*older];
        e.passed += e.direction == s.direction && e.blocker == RequestBuffer::none ? 1 : 0;
    }
}

} // namespace cardsim::sim::memory
