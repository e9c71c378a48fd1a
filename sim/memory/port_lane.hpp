#pragma once
// One direction of a channel's user port: the kernel-side Avalon-MM port the card's units reach
// the channel through, which moves `ddr.port_bits` a kernel cycle.

#include "engine/card/card_config.hpp"
#include "sim/memory/memory_clock.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace cardsim::sim::memory {

/// One direction's data lane of a channel's user port, in memory cycles: a burst crosses it in
/// `step` cycles (burst bytes / port bytes x memory clock / kernel clock; 4 on the default card,
/// equal to the burst's own 4 data cycles, so the lane never delays a burst there), one burst after
/// another in the order they reach it. Beats cross as they come (cut-through): a read burst whose
/// last beat leaves the DRAM at `e` has crossed at max(e + lag, the previous burst's crossing +
/// step), where lag = max(0, step - burst cycles) is what a slower port adds to the burst's own
/// beats. A write burst is offered when its request has arrived and the front end is free; it has
/// crossed (and is in the controller) a step after the later of that and the previous crossing.
/// Crossings are kept exactly as reals (a non-integer step at a kernel clock that does not divide
/// the memory clock) and reported as the first cycle at or after them. A lane that is off (the
/// default, and `ddr replay`, which drives the controller at the EMIF's own interface) passes every
/// burst unchanged.
class PortLane {
public:
    PortLane() = default;
    /// A lane of `step` memory cycles a burst, for bursts of `burst_cycles` data cycles.
    PortLane(double step, Cycle burst_cycles)
        : step_(step), lag_(std::max(0.0, step - static_cast<double>(burst_cycles))), on_(true) {}

    bool on() const { return on_; }
    double step() const { return step_; }
    /// Nothing has crossed yet: idle from cycle `origin`.
    void reset(Cycle origin) { crossed_ = static_cast<double>(origin); }

    /// A read burst whose last beat leaves the DRAM at `end`: the cycle it has crossed.
    Cycle pass(Cycle end) {
        crossed_ = std::max(static_cast<double>(end) + lag_, crossed_ + step_);
        return cycle(crossed_);
    }
    /// `k` more periods of read bursts, each period the bursts `ends` of the period just passed
    /// (in order) moved `delta` cycles later: the cycle the last has crossed. The crossing after N
    /// bursts is max(c0 + N step, max over bursts i of (e_i + lag + (bursts after i) x step)); in
    /// one burst's series over the periods that term is linear in the period, so the first and the
    /// last period bound it.
    Cycle pass_periods(std::span<const Cycle> ends, Cycle delta, std::uint64_t k) {
        const auto p = static_cast<double>(ends.size());
        const double kk = static_cast<double>(k), d = static_cast<double>(delta);
        double c = crossed_ + kk * p * step_;
        for (std::size_t j = 0; j < ends.size(); ++j) {
            const double e = static_cast<double>(ends[j]) + lag_, after = p - 1.0 - static_cast<double>(j);
            c = std::max(c, e + d + ((kk - 1.0) * p + after) * step_);
            c = std::max(c, e + kk * d + after * step_);
        }
        crossed_ = c;
        return cycle(crossed_);
    }
    /// `bursts` write bursts offered at `offered`: the cycle the last has crossed.
    Cycle enter(Cycle offered, std::uint64_t bursts = 1) {
        crossed_ = std::max(static_cast<double>(offered), crossed_) + static_cast<double>(bursts) * step_;
        return cycle(crossed_);
    }

private:
    static Cycle cycle(double t) { return static_cast<Cycle>(std::ceil(t)); }

    double step_ = 0;
    double lag_ = 0;
    double crossed_ = 0; ///< when the last burst has crossed
    bool on_ = false;
};

/// The lane of a channel's user port of `ddr.port_bits` at a `kernel_mhz` clock: a burst of
/// ddr.burst_bytes() takes burst bytes / port bytes kernel cycles, in memory cycles.
inline PortLane user_port_lane(const card::DdrConfig& ddr, double kernel_mhz) {
    const double kernel_cycles = static_cast<double>(ddr.burst_bytes()) / (ddr.port_bits / 8.0);
    return PortLane(kernel_cycles * ddr.clock_mhz() / kernel_mhz, ddr.timing.burst_length / 2);
}

} // namespace cardsim::sim::memory
