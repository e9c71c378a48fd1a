#pragma once
// First ready, first come first served, with read/write grouping and a starvation cap.

#include "sim/memory/scheduler.hpp"

#include <algorithm>

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

} // namespace cardsim::sim::memory
