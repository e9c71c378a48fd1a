#pragma once
// The policy that picks a channel's next burst (DRAMSys' SchedulerIF): the controller's timing
// core stays one piece; a scheduler only chooses among the bursts the request buffer holds.

#include "engine/card/card_config.hpp"
#include "sim/memory/request_buffer.hpp"

#include <cstdint>
#include <memory>

namespace cardsim::sim::memory {

/// What a scheduler sees of one bank when it picks the bank's next burst (DRAMSys' BankMachine):
/// the bank, its open row, the cycle of its decision (bursts that entered the buffer later are
/// not visible yet) and the direction the controller serves.
struct BankMachine {
    std::uint32_t bank = 0;
    bool open = false;
    std::uint32_t row = 0; ///< the open row, when open
    Cycle decision = 0;
    Direction direction = Direction::Read;
};

/// A scheduling policy over a RequestBuffer. The controller asks, per bank, which burst to serve
/// next (`next_request`), serves the earliest-ready of the banks' answers, and reports each
/// served burst (`served`). A policy that never lets a burst overtake an older one says so
/// (`in_order`): the controller then times every request when it arrives, with no queue.
class SchedulerIF {
public:
    virtual ~SchedulerIF() = default;
    /// True when requests are always served in arrival order.
    virtual bool in_order() const = 0;
    /// The direction to serve next (read/write grouping); called once per decision.
    virtual Direction serving() = 0;
    /// The burst `bank` should serve next in `bank.direction`, or RequestBuffer::none. Only bursts
    /// that entered by `bank.decision` and are not blocked by a hazard qualify.
    virtual std::int32_t next_request(const BankMachine& bank) const = 0;
    /// What `next_request(bank)` answers now that burst `added` entered `bank.bank`'s queue as its
    /// youngest (of `bank.direction`, not blocked), given that it answered `previous` (not none)
    /// just before, with the bank, its decision and every other burst unchanged. A policy may
    /// answer without scanning the queue; by default it scans.
    virtual std::int32_t next_request_after_push(const BankMachine& bank, std::int32_t previous,
                                                 std::int32_t added) const {
        (void)previous;
        (void)added;
        return next_request(bank);
    }
    /// How soon `bank` must switch rows if it serves `entry`, its pick, now: the controller ranks
    /// the banks' picks by their column command, then by this (smaller first), then by age. 0 (the
    /// default, and for a pick that is no row hit) leaves the order by age.
    virtual std::uint32_t switch_urgency(const BankMachine& bank, std::int32_t entry) const {
        (void)bank;
        (void)entry;
        return 0;
    }
    /// `next_request(bank)`, and into `urgency` its `switch_urgency` (0 when none): a policy may
    /// find both in one pass over the bank's queue.
    virtual std::int32_t next_request_ranked(const BankMachine& bank, std::uint32_t& urgency) const {
        const std::int32_t entry = next_request(bank);
        urgency = entry != RequestBuffer::none ? switch_urgency(bank, entry) : 0;
        return entry;
    }
    /// Whether a bank that holds one burst alone, of `bank.direction` and not blocked, always
    /// serves it next with switch urgency 0 (`next_request_ranked` then need not be asked).
    virtual bool picks_sole_burst() const { return false; }
    /// The largest `switch_urgency`.
    static constexpr std::uint32_t max_urgency = 63;
    /// Whether `switch_urgency` may answer other than 0.
    virtual bool ranks_switches() const { return false; }
    /// Whether a queued burst of `direction` other than `except` hits `row` of `bank`.
    virtual bool has_further_row_hit(std::uint32_t bank, std::uint32_t row, Direction direction,
                                     std::int32_t except) const = 0;
    /// Burst `i` is being served (before it leaves the buffer): the policy updates its counters.
    virtual void served(std::int32_t i) = 0;
    /// Write batches the policy started (read/write grouping).
    virtual std::uint64_t write_batches() const { return 0; }
    /// Whether a write batch is under way (writes go before reads until it ends).
    virtual bool draining_writes() const { return false; }
    /// Forgets its state and counters (the controller was reset).
    virtual void reset() {}
};

/// The scheduler `ddr.controller.scheduler` names, over `buffer`.
std::unique_ptr<SchedulerIF> make_scheduler(const card::DdrConfig& ddr, RequestBuffer& buffer);

} // namespace cardsim::sim::memory
