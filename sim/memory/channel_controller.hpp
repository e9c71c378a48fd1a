#pragma once
// One channel's memory controller: a request buffer, a scheduling policy and the timing core.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_timing.hpp"
#include "sim/memory/request_buffer.hpp"
#include "sim/memory/scheduler.hpp"

#include <memory>

namespace cardsim::sim::memory {

/// The controller of one DDR channel (plain C++; DdrChannel wraps it as a TLM target). Requests
/// enter its buffer, its scheduler (`ddr.controller.scheduler`) picks the next burst, and the
/// timing core (ChannelTiming) times it. An in-order scheduler needs no buffer: every request is
/// timed when it arrives, on the core's in-order path.
class ChannelController {
public:
    explicit ChannelController(const card::DdrConfig& ddr);

    /// Times a request of `length` bytes at channel-local `address`, arriving at `arrival`, and
    /// returns its completion (as ChannelTiming::access: the last read beat, or the write
    /// accepted). The request is served with what the controller holds when it arrives.
    Cycle access(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival);
    /// Serves everything the controller holds and issues every queued write; returns the cycle the
    /// channel's last data beat ends.
    Cycle flush();
    /// Forgets all requests, state and statistics: idle at cycle `origin`.
    void reset(Cycle origin);

    const ChannelStats& stats() const { return core_.stats(); }
    ChannelTiming& core() { return core_; }
    const ChannelTiming& core() const { return core_; }
    const SchedulerIF& scheduler() const { return *scheduler_; }

private:
    ChannelTiming core_;
    RequestBuffer buffer_;
    std::unique_ptr<SchedulerIF> scheduler_;
};

} // namespace cardsim::sim::memory
