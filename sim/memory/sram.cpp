#include "sim/memory/sram.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

namespace cardsim::sim::memory {

void SramStore::require(std::uint64_t bytes, std::string_view what) const {
    if (bytes > capacity())
        throw Error(fmt::format("{} of {} bytes does not fit the on-chip SRAM of {} bytes ({} bytes over)",
                                what, bytes, capacity(), bytes - capacity()));
}

void SramStore::check(std::uint64_t offset, std::uint64_t bytes, std::string_view what) const {
    if (!contains(offset, bytes))
        throw Error(
            fmt::format("on-chip SRAM {} of {} bytes at offset {} ends at {}, past the capacity of {} bytes",
                        what, bytes, offset, offset + bytes, capacity()));
}

void SramStore::read(std::uint64_t offset, std::span<std::byte> out) const {
    check(offset, out.size(), "read");
    store_.read(offset, out);
}

void SramStore::write(std::uint64_t offset, std::span<const std::byte> in) {
    check(offset, in.size(), "write");
    store_.write(offset, in);
}

Sram::Sram(const sc_core::sc_module_name& name, const card::SramConfig& sram, double kernel_mhz)
    : sc_core::sc_module(name), socket("socket"), store_(sram.bytes), config_(sram),
      kernel_cycle_(1.0e6 / kernel_mhz, sc_core::SC_PS) {
    socket.register_b_transport(this, &Sram::b_transport);
    socket.register_transport_dbg(this, &Sram::transport_dbg);
    socket.register_get_direct_mem_ptr(this, &Sram::get_direct_mem_ptr);
}

bool Sram::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi& dmi) {
    if (store_.capacity() == 0) return false;
    dmi.set_dmi_ptr(reinterpret_cast<unsigned char*>(store_.base()));
    dmi.set_start_address(0);
    dmi.set_end_address(store_.capacity() - 1);
    dmi.allow_read_write();
    dmi.set_read_latency(sc_core::SC_ZERO_TIME);
    dmi.set_write_latency(sc_core::SC_ZERO_TIME);
    return true;
}

sc_core::sc_time Sram::access_time(std::uint64_t bytes) const {
    const std::uint64_t cycles =
        config_.latency + (bytes + config_.bytes_per_cycle - 1) / config_.bytes_per_cycle;
    return kernel_cycle_ * static_cast<double>(cycles);
}

std::string Sram::describe_error(const tlm::tlm_generic_payload& gp) const {
    const std::uint64_t a = gp.get_address();
    const std::uint64_t n = gp.get_data_length();
    return fmt::format("on-chip SRAM {} of {} bytes at offset {} ends at {}, past the capacity of {} bytes",
                       gp.is_read() ? "read" : "write", n, a, a + n, store_.capacity());
}

void Sram::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const std::uint64_t a = gp.get_address();
    const std::uint64_t n = gp.get_data_length();
    if (gp.get_command() == tlm::TLM_IGNORE_COMMAND) {
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
        return;
    }
    if (!store_.contains(a, n)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    if (gp.get_byte_enable_ptr()) {
        gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
        return;
    }
    if (unsigned char* data = gp.get_data_ptr()) {
        auto bytes = reinterpret_cast<std::byte*>(data);
        if (gp.is_read())
            store_.read(a, {bytes, n});
        else
            store_.write(a, {bytes, n});
    }
    delay += access_time(n);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int Sram::transport_dbg(tlm::tlm_generic_payload& gp) {
    const std::uint64_t a = gp.get_address();
    if (a >= store_.capacity() || !gp.get_data_ptr()) return 0;
    const std::uint64_t n = std::min<std::uint64_t>(gp.get_data_length(), store_.capacity() - a);
    auto bytes = reinterpret_cast<std::byte*>(gp.get_data_ptr());
    if (gp.is_read())
        store_.read(a, {bytes, n});
    else if (gp.is_write())
        store_.write(a, {bytes, n});
    else
        return 0;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return static_cast<unsigned int>(n);
}

} // namespace cardsim::sim::memory
