#pragma once
// One DDR4 channel as a TLM-2.0 target: the timing core plus the channel's bytes.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_controller.hpp"
#include "sim/memory/sparse_store.hpp"
#include "sim/memory/time_base.hpp"

#include <memory>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

namespace cardsim::sim::memory {

/// A DDR4 channel (DRAMSys style): `socket` takes loosely-timed transactions addressed in the
/// channel's own address space (0 .. capacity). `b_transport` times the transaction with the
/// channel's controller (arrival = sc_time_stamp() + delay) and adds to `delay` the time
/// until it completes (last read beat, or write accepted); it never calls wait(). A transaction
/// of any length is one call: its bursts are timed inside the core. Data moves between the
/// payload and the channel's sparse store; a null data pointer times the transaction without
/// moving data (timing-only runs). `transport_dbg` moves data without timing. Errors set the TLM
/// response: outside the channel -> TLM_ADDRESS_ERROR_RESPONSE, byte enables ->
/// TLM_BYTE_ENABLE_ERROR_RESPONSE, streaming width below the length -> TLM_BURST_ERROR_RESPONSE.
class DdrChannel : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<DdrChannel> socket;

    DdrChannel(const sc_core::sc_module_name& name, const card::DdrConfig& ddr);

    /// The channel's controller: request buffer, scheduler and timing core.
    ChannelController& controller() { return controller_; }
    const ChannelController& controller() const { return controller_; }
    /// The timing core (and its statistics).
    ChannelTiming& timing() { return controller_.core(); }
    const ChannelTiming& timing() const { return controller_.core(); }
    /// The channel's own bytes, reserved on first use: a channel inside a DdrMemory never moves
    /// data (the memory holds the bytes of the whole address space), a channel on its own does.
    SparseStore& store();
    const TimeBase& time_base() const { return time_; }

private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    unsigned int transport_dbg(tlm::tlm_generic_payload& gp);
    /// The response a payload earns before timing (OK when it is a valid request).
    tlm::tlm_response_status check(const tlm::tlm_generic_payload& gp) const;

    ChannelController controller_;
    std::unique_ptr<SparseStore> store_;
    std::uint64_t capacity_;
    TimeBase time_;
};

} // namespace cardsim::sim::memory
