#pragma once
// A TLM-2.0 extension through which a DDR transaction hands back where its time went.

#include "sim/memory/stall_split.hpp"

#include <tlm>

namespace cardsim::sim::memory {

/// Set on a payload by an initiator that wants a DDR request's stall split: the memory fills
/// `split` (memory cycles) with the split of the request from its arrival (the memory-clock edge
/// at or after sc_time_stamp() + delay) to its completion; of a request split over channels, the
/// part that completed last, as the queued port reports it. A memory that does not see the
/// extension leaves it alone, so the initiator clears it before each call. The initiator owns
/// it: it is not freed with the payload (clear it from the payload before the payload goes).
struct StallExtension : tlm::tlm_extension<StallExtension> {
    StallSplit split;
    Cycle arrival = 0;          ///< the request's arrival, memory cycles
    std::uint32_t channel = 0;  ///< the channel of the part `split` is of
    std::uint64_t channels = 0; ///< the channels the request reached, one bit each

    tlm::tlm_extension_base* clone() const override { return new StallExtension(*this); } // TLM's contract
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const StallExtension&>(other);
    }
};

} // namespace cardsim::sim::memory
