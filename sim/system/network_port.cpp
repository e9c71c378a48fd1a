#include "sim/system/network_port.hpp"

#include <fmt/core.h>

#include <cstring>

namespace cardsim::sim::system {

NetworkPort::NetworkPort(const sc_core::sc_module_name& name, std::uint32_t card,
                         const std::vector<std::uint32_t>& to, const std::vector<std::uint32_t>& from)
    : sc_core::sc_module(name), in("in"), card_(card) {
    in.register_b_transport(this, &NetworkPort::b_transport);
    for (auto peer : to)
        out_[peer] = std::make_unique<tlm_utils::simple_initiator_socket<NetworkPort>>(
            fmt::format("to_card{}", peer).c_str());
    for (auto peer : from)
        inboxes_[peer];
}

std::optional<std::string> NetworkPort::send(std::uint32_t peer, std::span<const std::byte> data,
                                             std::uint64_t bytes, sc_core::sc_time& delay) {
    auto s = out_.find(peer);
    if (s == out_.end()) return fmt::format("card {} has no link to card {}", card_, peer);
    payload_.set_command(tlm::TLM_WRITE_COMMAND);
    payload_.set_address(card_);
    payload_.set_data_ptr(
        data.empty() ? nullptr : reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data())));
    payload_.set_data_length(static_cast<unsigned>(bytes));
    payload_.set_streaming_width(static_cast<unsigned>(bytes));
    payload_.set_byte_enable_ptr(nullptr);
    payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    (*s->second)->b_transport(payload_, delay);
    return std::nullopt;
}

void NetworkPort::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
    auto& box = inboxes_[static_cast<std::uint32_t>(payload.get_address())];
    Arrived a;
    a.message.bytes = payload.get_data_length();
    if (payload.get_data_ptr()) {
        a.message.data.resize(a.message.bytes);
        std::memcpy(a.message.data.data(), payload.get_data_ptr(), a.message.bytes);
    }
    a.at = sc_core::sc_time_stamp() + delay;
    box.queue.push_back(std::move(a));
    box.arrived.notify(delay);
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::optional<std::string> NetworkPort::receive(std::uint32_t peer, Message& out) {
    auto b = inboxes_.find(peer);
    if (b == inboxes_.end()) return fmt::format("card {} has no link from card {}", card_, peer);
    auto& box = b->second;
    while (box.queue.empty())
        sc_core::wait(box.arrived);
    if (box.queue.front().at > sc_core::sc_time_stamp())
        sc_core::wait(box.queue.front().at - sc_core::sc_time_stamp());
    out = std::move(box.queue.front().message);
    box.queue.pop_front();
    return std::nullopt;
}

} // namespace cardsim::sim::system
