#pragma once
// First come, first served: every request in arrival order (DRAMSys' SchedulerFifo).

#include "sim/memory/scheduler.hpp"

namespace cardsim::sim::memory {

/// Serves bursts strictly in arrival order: each bank its oldest burst, the channel the oldest
/// of both directions. Nothing overtakes anything, so the controller times each request at
/// arrival on the timing core's in-order path (column commands in order, row commands early,
/// writes posted and issued in batches) and never queues.
class SchedulerFifo final : public SchedulerIF {
public:
    explicit SchedulerFifo(RequestBuffer& buffer) : buffer_(buffer) {}
    bool in_order() const override { return true; }
    Direction serving() override;
    std::int32_t next_request(const BankMachine& bank) const override;
    bool has_further_row_hit(std::uint32_t bank, std::uint32_t row, Direction direction,
                             std::int32_t except) const override;
    void served(std::int32_t) override {}

private:
    RequestBuffer& buffer_;
};

} // namespace cardsim::sim::memory
