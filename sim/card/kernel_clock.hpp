#pragma once
// The kernel (user) clock of the card's units: cycles and SystemC time.

#include <systemc>

#include <cmath>
#include <cstdint>

namespace cardsim::sim {

/// The units' clock. Its period is a whole number of femtoseconds (the configured MHz rounded to
/// it: 3 333 333 fs at 300 MHz), so cycle arithmetic is exact; a time between edges belongs to the
/// next edge. Needs the SystemC time resolution at 1 fs or finer for exact edges (the card sets it).
class KernelClock {
public:
    explicit KernelClock(double mhz) : period_fs_(static_cast<std::uint64_t>(std::llround(1e9 / mhz))) {
        resolution_fs_ =
            static_cast<std::uint64_t>(sc_core::sc_get_time_resolution().to_seconds() * 1e15 + 0.5);
        if (resolution_fs_ == 0) resolution_fs_ = 1;
    }
    /// The time of cycle `c`'s edge.
    sc_core::sc_time time_of(std::uint64_t c) const {
        return sc_core::sc_time::from_value(c * period_fs_ / resolution_fs_);
    }
    /// The first cycle at or after `t`.
    std::uint64_t cycle_at_or_after(const sc_core::sc_time& t) const {
        std::uint64_t fs = t.value() * resolution_fs_;
        return (fs + period_fs_ - 1) / period_fs_;
    }
    /// Cycles `d` lasts, rounded up.
    std::uint64_t cycles_of(const sc_core::sc_time& d) const { return cycle_at_or_after(d); }
    /// The clock period, fs.
    std::uint64_t period_fs() const { return period_fs_; }
    /// Seconds of `c` cycles.
    double seconds(std::uint64_t c) const { return double(c) * double(period_fs_) * 1e-15; }

private:
    std::uint64_t period_fs_;
    std::uint64_t resolution_fs_ = 1;
};

} // namespace cardsim::sim
