#pragma once
// The DDR memory clock: conversions between memory-clock cycles and picoseconds.

#include <cstdint>
#include <numeric>

namespace cardsim::sim::memory {

/// A time in memory-clock cycles (tCK = 2e6 / speed_mts ps; 833.33 ps for DDR4-2400).
using Cycle = std::uint64_t;

/// Division of 64-bit numbers by a divisor fixed at construction, by multiplication with a
/// precomputed reciprocal (Granlund and Montgomery, "Division by invariant integers using
/// multiplication", 1994, fig. 4.1): exact for every 64-bit dividend, and a few times faster than
/// a hardware divide.
class Divider {
public:
    explicit Divider(std::uint64_t d = 1) {
        if ((d & (d - 1)) == 0) {
            shift_ = static_cast<std::uint8_t>(__builtin_ctzll(d));
            return;
        }
        using u128 = unsigned __int128;
        power_of_two_ = false;
        shift_ = static_cast<std::uint8_t>(64 - __builtin_clzll(d - 1)); // ceil(log2 d)
        magic_ =
            static_cast<std::uint64_t>((static_cast<u128>((std::uint64_t{1} << shift_) - d) << 64) / d) + 1;
    }
    /// floor(n / d).
    std::uint64_t divide(std::uint64_t n) const {
        if (power_of_two_) return n >> shift_;
        const auto t = static_cast<std::uint64_t>((static_cast<unsigned __int128>(magic_) * n) >> 64);
        return (t + ((n - t) >> 1)) >> (shift_ - 1);
    }

private:
    std::uint64_t magic_ = 0;
    std::uint8_t shift_ = 0;
    bool power_of_two_ = true;
};

/// The memory clock of a DDR data rate. Conversions are exact rational arithmetic (64-bit when it
/// cannot overflow, else 128-bit); `ps_of` and `cycles_of_ps` round to nearest, so cycles -> ps
/// -> cycles gives the cycles back.
class MemoryClock {
public:
    explicit MemoryClock(std::uint32_t speed_mts) {
        const std::uint64_t g = std::gcd<std::uint64_t, std::uint64_t>(2'000'000, speed_mts);
        num_ = 2'000'000 / g;
        den_ = speed_mts / g;
        by_num_ = Divider(num_);
        by_den_ = Divider(den_);
        by_num_fs_ = Divider(num_ * 1000);
    }
    /// Picoseconds of `c` cycles, rounded to nearest.
    std::uint64_t ps_of(Cycle c) const { return mul_div(c, num_, den_ / 2, den_, by_den_); }
    /// Cycles nearest to `ps`.
    Cycle cycles_of_ps(std::uint64_t ps) const { return mul_div(ps, den_, num_ / 2, num_, by_num_); }
    /// The first cycle at or after `ps` (a request arriving between edges waits for the next).
    Cycle cycles_at_or_after_ps(std::uint64_t ps) const { return mul_div(ps, den_, num_ - 1, num_, by_num_); }
    /// Femtoseconds of `c` cycles, rounded down (so converting back with a ceiling is exact).
    std::uint64_t fs_floor(Cycle c) const { return mul_div(c, num_ * 1000, 0, den_, by_den_); }
    /// The first cycle at or after `fs`.
    Cycle cycles_at_or_after_fs(std::uint64_t fs) const {
        return mul_div(fs, den_, num_ * 1000 - 1, num_ * 1000, by_num_fs_);
    }
    /// Nanoseconds of `c` cycles.
    double ns(double c) const { return c * static_cast<double>(num_) / static_cast<double>(den_) / 1000.0; }
    /// Seconds of `c` cycles.
    double seconds(double c) const { return ns(c) * 1e-9; }
    /// The clock's frequency, MHz.
    double mhz() const { return 1.0e6 * static_cast<double>(den_) / static_cast<double>(num_); }

private:
    /// floor((a * m + add) / d); `by_d` divides by d.
    static std::uint64_t mul_div(std::uint64_t a, std::uint64_t m, std::uint64_t add, std::uint64_t d,
                                 const Divider& by_d) {
        std::uint64_t p = 0;
        if (!__builtin_mul_overflow(a, m, &p) && !__builtin_add_overflow(p, add, &p)) return by_d.divide(p);
        using u128 = unsigned __int128;
        return static_cast<std::uint64_t>((static_cast<u128>(a) * m + add) / d);
    }
    std::uint64_t num_ = 1; ///< ps per cycle = num_ / den_
    std::uint64_t den_ = 1;
    Divider by_num_, by_den_, by_num_fs_;
};

} // namespace cardsim::sim::memory
