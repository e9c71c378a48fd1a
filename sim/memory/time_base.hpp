#pragma once
// Conversions between SystemC time and memory-clock cycles.

#include "sim/memory/memory_clock.hpp"

#include <systemc>

namespace cardsim::sim::memory {

/// Converts sc_time to memory-clock cycles and back, at the kernel's time resolution (read once,
/// at construction). A time between clock edges maps to the next edge; a cycle maps to the time
/// of its edge rounded down, so cycle -> time -> cycle gives the cycle back.
class TimeBase {
public:
    explicit TimeBase(const MemoryClock& clock);
    /// The first memory-clock cycle at or after `t`.
    Cycle cycle_at_or_after(const sc_core::sc_time& t) const {
        return clock_.cycles_at_or_after_fs(t.value() * resolution_fs_);
    }
    /// The time of cycle `c`.
    sc_core::sc_time time_of(Cycle c) const {
        return sc_core::sc_time::from_value(by_resolution_.divide(clock_.fs_floor(c)));
    }
    const MemoryClock& clock() const { return clock_; }

private:
    MemoryClock clock_;
    std::uint64_t resolution_fs_;
    Divider by_resolution_;
};

} // namespace cardsim::sim::memory
