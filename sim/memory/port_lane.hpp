#pragma once
// One direction of a channel's user port: the kernel-side Avalon-MM port the card's units reach the
// channel through, which moves `ddr.port_bits` a kernel cycle.

#include "engine/card/card_config.hpp"
#include "sim/memory/memory_clock.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace cardsim::sim::memory {

/// One direction's data lane of a channel's user port, in memory cycles: a burst crosses it in
/// `step` cycles (burst bytes / port bytes x memory clock / kernel clock: 4 on the default card,
/// the burst's own 4 data cycles), one burst after another in the order they reach it.
/// - Read data: a burst whose last beat leaves the DRAM at `e` has crossed at max(e + lag, the
///   previous burst's crossing + step), beats streaming through as they come (cut-through), where
///   lag = max(0, step - burst cycles) is what a slower port adds to the burst's own beats. On the
///   default card the lane delays no read burst. It models the port's bandwidth: the latency of
///   the EMIF's read path and of the clock crossing is not modelled.
/// - Write data: a burst offered when its request has arrived and the front end takes it has
///   crossed (and is in the controller) a step after the later of that and the previous crossing.
///
/// Crossings are kept exactly, on a grid of 2^-20 cycle (the step rounded to it once), so a stream
/// advanced in closed form crosses at the very cycle it does burst by burst; a crossing is reported
/// as the first whole cycle at or after it. A lane that is off (the default, and `ddr replay`
/// without `--user-port`, which drives the controller at the EMIF's own interface) is not used.
class PortLane {
public:
    PortLane() = default;
    /// A lane of `step` memory cycles a burst, for bursts of `burst_cycles` data cycles.
    PortLane(double step, Cycle burst_cycles)
        : step_(static_cast<Fixed>(std::llround(std::ldexp(step, fraction_bits)))),
          lag_(step_ > (Fixed{burst_cycles} << fraction_bits) ? step_ - (Fixed{burst_cycles} << fraction_bits)
                                                              : 0),
          on_(true) {}

    bool on() const { return on_; }
    /// Memory cycles a burst takes to cross (on the lane's grid).
    double step() const { return std::ldexp(static_cast<double>(step_), -fraction_bits); }
    /// Whether a burst crosses no slower than `cycles` apart (one every `cycles` keeps up with it).
    bool keeps_up_with(Cycle cycles) const { return step_ <= (Fixed{cycles} << fraction_bits); }
    /// Memory cycles `bursts` bursts take to cross, rounded up.
    Cycle cycles(std::uint64_t bursts) const { return cycle(bursts * step_); }
    /// The first cycle at or after the last crossing.
    Cycle crossed() const { return cycle(crossed_); }
    /// Nothing has crossed yet: idle from cycle `origin`.
    void reset(Cycle origin) { crossed_ = Fixed{origin} << fraction_bits; }

    /// A read burst whose last beat leaves the DRAM at `end`: the cycle it has crossed.
    Cycle pass(Cycle end) {
        crossed_ = std::max((Fixed{end} << fraction_bits) + lag_, crossed_ + step_);
        return cycle(crossed_);
    }
    /// `k` more periods of read bursts, each period the bursts `ends` of the period just passed (in
    /// order) moved `delta` cycles later: the cycle the last has crossed. The crossing after N
    /// bursts is max(c0 + N step, max over bursts i of (e_i + lag + (bursts after i) x step)); in
    /// one burst's series over the periods that term is linear in the period, so the first and the
    /// last period bound it.
    Cycle pass_periods(std::span<const Cycle> ends, Cycle delta, std::uint64_t k) {
        const Fixed p = ends.size(), d = Fixed{delta} << fraction_bits;
        Fixed c = crossed_ + k * p * step_;
        for (std::size_t j = 0; j < ends.size(); ++j) {
            const Fixed e = (Fixed{ends[j]} << fraction_bits) + lag_, after = p - 1 - j;
            c = std::max(c, e + d + ((k - 1) * p + after) * step_);
            c = std::max(c, e + k * d + after * step_);
        }
        crossed_ = c;
        return cycle(crossed_);
    }
    /// `bursts` write bursts offered at `offered` (a floor other than the lane's own: the
    /// request's arrival, a free slot; never a crossing the lane reported): the cycle the last has
    /// crossed. A write's bursts cross a step apart, not a rounded cycle apart.
    Cycle enter(Cycle offered, std::uint64_t bursts = 1) {
        crossed_ = std::max(Fixed{offered} << fraction_bits, crossed_) + bursts * step_;
        return cycle(crossed_);
    }

private:
    __extension__ using Fixed = unsigned __int128; ///< cycles x 2^fraction_bits
    static constexpr int fraction_bits = 20;
    static Cycle cycle(Fixed t) {
        return static_cast<Cycle>((t + ((Fixed{1} << fraction_bits) - 1)) >> fraction_bits);
    }

    Fixed step_ = 0;
    Fixed lag_ = 0;
    Fixed crossed_ = 0; ///< when the last burst has crossed
    bool on_ = false;
};

/// The lane of a channel's user port of `ddr.port_bits` at a `kernel_mhz` clock: a burst of
/// ddr.burst_bytes() takes burst bytes / port bytes kernel cycles, in memory cycles.
inline PortLane user_port_lane(const card::DdrConfig& ddr, double kernel_mhz) {
    const double kernel_cycles = static_cast<double>(ddr.burst_bytes()) / (ddr.port_bits / 8.0);
    return PortLane(kernel_cycles * ddr.clock_mhz() / kernel_mhz, ddr.timing.burst_length / 2);
}

} // namespace cardsim::sim::memory
