#pragma once
// The on-chip SRAM's port to the units: any number of unit sockets in front of the one SRAM
// target. The SRAM is banked (its config's bytes per cycle), so the port forwards every access
// unchanged; the SRAM times it.

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

namespace cardsim::sim {

/// Forwards transactions from every bound unit to the SRAM (b_transport, debug transport, DMI).
class SramPort : public sc_core::sc_module {
public:
    tlm_utils::multi_passthrough_target_socket<SramPort> units;
    tlm_utils::simple_initiator_socket<SramPort> sram;

    explicit SramPort(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name), units("units"), sram("sram") {
        units.register_b_transport(this, &SramPort::b_transport);
        units.register_transport_dbg(this, &SramPort::transport_dbg);
        units.register_get_direct_mem_ptr(this, &SramPort::get_direct_mem_ptr);
    }

private:
    void b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
        sram->b_transport(gp, delay);
    }
    unsigned int transport_dbg(int, tlm::tlm_generic_payload& gp) { return sram->transport_dbg(gp); }
    bool get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
        return sram->get_direct_mem_ptr(gp, dmi);
    }
};

} // namespace cardsim::sim
