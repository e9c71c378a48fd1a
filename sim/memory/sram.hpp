#pragma once
// The card's on-chip SRAM (M20K): a capacity-checked store and its TLM-2.0 target.

#include "engine/card/card_config.hpp"
#include "sim/memory/sparse_store.hpp"

#include <cstdint>
#include <span>
#include <string_view>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

namespace cardsim::sim::memory {

/// The SRAM's bytes, `capacity` of them. Every access is checked: one that runs past the
/// capacity is a cardsim::Error naming the offset, the size and the capacity.
class SramStore {
public:
    explicit SramStore(std::uint64_t capacity) : store_(capacity) {}
    /// Refuses (cardsim::Error) a `what` of `bytes` that does not fit, naming both sizes — e.g. a
    /// program's arena at load.
    void require(std::uint64_t bytes, std::string_view what) const;
    /// Whether [offset, offset + bytes) lies inside the capacity.
    bool contains(std::uint64_t offset, std::uint64_t bytes) const {
        return offset <= capacity() && bytes <= capacity() - offset;
    }
    void read(std::uint64_t offset, std::span<std::byte> out) const;
    void write(std::uint64_t offset, std::span<const std::byte> in);
    std::uint64_t capacity() const { return store_.capacity(); }
    /// The first byte (for DMI grants: the SRAM is one contiguous range).
    std::byte* base() { return store_.base(); }

private:
    void check(std::uint64_t offset, std::uint64_t bytes, std::string_view what) const;
    SparseStore store_;
};

/// The on-chip SRAM as a loosely-timed TLM target. Addresses are offsets into the SRAM. An access
/// of n bytes adds latency + ceil(n / bytes_per_cycle) kernel cycles to the delay (the config's
/// [sram] figures; banked ports, no contention between units). An access past the capacity is a
/// TLM_ADDRESS_ERROR_RESPONSE; `describe_error` names the sizes. DMI is granted over the whole
/// capacity, read and write (units reach operands in place and time them with data-less accesses).
class Sram : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<Sram> socket;

    Sram(const sc_core::sc_module_name& name, const card::SramConfig& sram, double kernel_mhz);

    SramStore& store() { return store_; }
    const SramStore& store() const { return store_; }
    /// The time an access of `bytes` takes.
    sc_core::sc_time access_time(std::uint64_t bytes) const;
    std::string describe_error(const tlm::tlm_generic_payload& gp) const;

private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    unsigned int transport_dbg(tlm::tlm_generic_payload& gp);
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);

    SramStore store_;
    card::SramConfig config_;
    sc_core::sc_time kernel_cycle_;
};

} // namespace cardsim::sim::memory
