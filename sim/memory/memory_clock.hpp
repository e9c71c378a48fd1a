#pragma once
// The DDR memory clock: conversions between memory-clock cycles and picoseconds.

#include <cstdint>
#include <numeric>

namespace cardsim::sim::memory {

/// A time in memory-clock cycles (tCK = 2e6 / speed_mts ps; 833.33 ps for DDR4-2400).
using Cycle = std::uint64_t;

/// The memory clock of a DDR data rate. Conversions are exact rational arithmetic in 128 bits;
/// `ps_of` and `cycles_of_ps` round to nearest, so cycles -> ps -> cycles gives the cycles back.
class MemoryClock {
public:
    explicit MemoryClock(std::uint32_t speed_mts) {
        const std::uint64_t g = std::gcd<std::uint64_t, std::uint64_t>(2'000'000, speed_mts);
        num_ = 2'000'000 / g;
        den_ = speed_mts / g;
    }
    /// Picoseconds of `c` cycles, rounded to nearest.
    std::uint64_t ps_of(Cycle c) const { return div_nearest(wide(c) * num_, den_); }
    /// Cycles nearest to `ps`.
    Cycle cycles_of_ps(std::uint64_t ps) const { return div_nearest(wide(ps) * den_, num_); }
    /// The first cycle at or after `ps` (a request arriving between edges waits for the next).
    Cycle cycles_at_or_after_ps(std::uint64_t ps) const {
        return static_cast<Cycle>((wide(ps) * den_ + num_ - 1) / num_);
    }
    /// Femtoseconds of `c` cycles, rounded down (so converting back with a ceiling is exact).
    std::uint64_t fs_floor(Cycle c) const { return static_cast<std::uint64_t>(wide(c) * num_ * 1000 / den_); }
    /// The first cycle at or after `fs`.
    Cycle cycles_at_or_after_fs(std::uint64_t fs) const {
        return static_cast<Cycle>((wide(fs) * den_ + num_ * 1000 - 1) / (num_ * 1000));
    }
    /// Nanoseconds of `c` cycles.
    double ns(double c) const { return c * static_cast<double>(num_) / static_cast<double>(den_) / 1000.0; }
    /// Seconds of `c` cycles.
    double seconds(double c) const { return ns(c) * 1e-9; }
    /// The clock's frequency, MHz.
    double mhz() const { return 1.0e6 * static_cast<double>(den_) / static_cast<double>(num_); }

private:
    using u128 = unsigned __int128;
    static u128 wide(std::uint64_t v) { return v; }
    static std::uint64_t div_nearest(u128 a, std::uint64_t b) {
        return static_cast<std::uint64_t>((a + b / 2) / b);
    }
    std::uint64_t num_ = 1; ///< ps per cycle = num_ / den_
    std::uint64_t den_ = 1;
};

} // namespace cardsim::sim::memory
