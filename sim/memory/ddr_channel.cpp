#include "sim/memory/ddr_channel.hpp"

#include "sim/memory/stall_extension.hpp"

namespace cardsim::sim::memory {

DdrChannel::DdrChannel(const sc_core::sc_module_name& name, const card::DdrConfig& ddr)
    : sc_core::sc_module(name), socket("socket"), controller_(ddr), capacity_(ddr.channel_bytes()),
      time_(MemoryClock(ddr.speed_mts)) {
    socket.register_b_transport(this, &DdrChannel::b_transport);
    socket.register_transport_dbg(this, &DdrChannel::transport_dbg);
}

SparseStore& DdrChannel::store() {
    if (!store_) store_ = std::make_unique<SparseStore>(capacity_);
    return *store_;
}

tlm::tlm_response_status DdrChannel::check(const tlm::tlm_generic_payload& gp) const {
    const std::uint64_t a = gp.get_address();
    const std::uint64_t n = gp.get_data_length();
    if (a > capacity_ || n > capacity_ - a) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    if (gp.get_byte_enable_ptr()) return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    if (gp.get_streaming_width() < n) return tlm::TLM_BURST_ERROR_RESPONSE;
    return tlm::TLM_OK_RESPONSE;
}

void DdrChannel::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const tlm::tlm_command cmd = gp.get_command();
    if (cmd == tlm::TLM_IGNORE_COMMAND) {
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
        return;
    }
    if (auto status = check(gp); status != tlm::TLM_OK_RESPONSE) {
        gp.set_response_status(status);
        return;
    }
    const std::uint64_t address = gp.get_address();
    const std::uint64_t length = gp.get_data_length();
    const Direction dir = cmd == tlm::TLM_READ_COMMAND ? Direction::Read : Direction::Write;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const Cycle arrival = time_.cycle_at_or_after(now + delay);
    auto* stalls = gp.get_extension<StallExtension>();
    if (stalls) {
        stalls->split = {};
        stalls->arrival = arrival;
        stalls->channel = 0; // of itself; DdrMemory names it among the card's
        stalls->channels = 1;
    }
    const Cycle done = controller_.access(dir, address, length, arrival, stalls ? &stalls->split : nullptr);
    if (unsigned char* data = gp.get_data_ptr()) {
        auto bytes = reinterpret_cast<std::byte*>(data);
        if (dir == Direction::Read)
            store().read(address, {bytes, length});
        else
            store().write(address, {bytes, length});
    }
    delay = time_.time_of(done) - now;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int DdrChannel::transport_dbg(tlm::tlm_generic_payload& gp) {
    const std::uint64_t a = gp.get_address();
    std::uint64_t n = gp.get_data_length();
    if (a >= capacity_ || !gp.get_data_ptr()) return 0;
    n = std::min<std::uint64_t>(n, capacity_ - a);
    auto bytes = reinterpret_cast<std::byte*>(gp.get_data_ptr());
    if (gp.get_command() == tlm::TLM_READ_COMMAND)
        store().read(a, {bytes, n});
    else if (gp.get_command() == tlm::TLM_WRITE_COMMAND)
        store().write(a, {bytes, n});
    else
        return 0;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return static_cast<unsigned int>(n);
}

} // namespace cardsim::sim::memory
