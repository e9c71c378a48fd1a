#pragma once
// What bound a unit command's phase: the request that completed last, and its channel's chain.

#include "sim/memory/stall_extension.hpp"

#include <array>
#include <bit>
#include <cstdint>

#include <systemc>

namespace cardsim::sim {

/// The requests of one phase of a unit command (its reads, or its writes), all issued at once:
/// which completed last (the phase's critical request), and where the phase's DDR time went along
/// its critical channel (the channel of that request, when it was a DDR request). A channel's
/// chain is the splits of the phase's requests that reached it, summed, each less its wait there
/// behind the phase's own earlier requests on that channel (a command's eighth expert stream
/// queues behind its first seven: that is the command moving its data, not waiting for others).
/// Requests on other channels ran beside the critical chain, in its shadow: they neither add to
/// it nor take from it. A request of no bytes is not timed and is not added.
struct PhaseCritical {
    sc_core::sc_time done = sc_core::SC_ZERO_TIME; ///< the critical request's completion, from the start
    bool any = false;                              ///< a request was added
    bool ddr = false;                              ///< the critical request was a DDR request
    std::uint32_t channel = 0;                     ///< its channel, when it was
    std::array<memory::StallSplit, 64> chain{};    ///< per channel: its requests' splits, memory cycles
    std::array<memory::Cycle, 64> own_end{};       ///< per channel: its requests' latest completion

    /// A request of the phase completed `delay` after the command's start, in DDR (`in_ddr`, `e`
    /// its stall extension as the memory filled it) or in SRAM (`e` unused). It becomes the
    /// critical one when it completed strictly after every request before it.
    void complete(const sc_core::sc_time& delay, bool in_ddr, const memory::StallExtension& e) {
        if (!any || delay > done) {
            done = delay;
            any = true;
            ddr = in_ddr;
            channel = e.channel;
        }
        if (in_ddr) add(e);
    }

    /// Adds a DDR request's split to the chain of every channel it reached: its wait on its part's
    /// channel behind the phase's own earlier requests there, which comes first in its split, is
    /// taken out of its queueing.
    void add(const memory::StallExtension& e) {
        memory::StallSplit s = e.split;
        const memory::Cycle end = e.arrival + s.total();
        const memory::Cycle mine = own_end[e.channel];
        const memory::Cycle own = mine > e.arrival ? std::min(mine, end) - e.arrival : 0;
        s.queueing -= std::min(s.queueing, own);
        for (std::uint64_t m = e.channels; m != 0; m &= m - 1) {
            const auto c = static_cast<std::size_t>(std::countr_zero(m));
            chain[c] += s;
            own_end[c] = std::max(own_end[c], end);
        }
    }

    /// The critical channel's chain (meaningful when the critical request was a DDR request).
    const memory::StallSplit& split() const { return chain[channel]; }
};

} // namespace cardsim::sim
