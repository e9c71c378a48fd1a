#include "sim/system/network_port.hpp"

#include <fmt/core.h>

#include <cstring>

namespace cardsim::sim::system {
namespace {

/// A payload's address: the card it comes from (high half) and the card it is for (low half).
std::uint64_t address_of(std::uint32_t origin, std::uint32_t dest) {
    return std::uint64_t(origin) << 32 | dest;
}

} // namespace

NetworkPort::NetworkPort(const sc_core::sc_module_name& name, std::uint32_t card,
                         const std::vector<std::uint32_t>& to, const std::vector<std::uint32_t>& from,
                         std::map<std::uint32_t, std::uint32_t> hops)
    : sc_core::sc_module(name), in("in"), card_(card), hops_(std::move(hops)) {
    in.register_b_transport(this, &NetworkPort::b_transport);
    for (auto peer : to)
        out_[peer] = std::make_unique<tlm_utils::simple_initiator_socket<NetworkPort>>(
            fmt::format("to_card{}", peer).c_str());
    for (auto peer : from)
        inboxes_[peer];
    SC_THREAD(forward);
}

void NetworkPort::transmit(std::uint32_t origin, std::uint32_t dest, std::uint32_t hop, const std::byte* data,
                           std::uint64_t bytes, sc_core::sc_time& delay) {
    payload_.set_command(tlm::TLM_WRITE_COMMAND);
    payload_.set_address(address_of(origin, dest));
    payload_.set_data_ptr(data ? reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data)) : nullptr);
    payload_.set_data_length(static_cast<unsigned>(bytes));
    payload_.set_streaming_width(static_cast<unsigned>(bytes));
    payload_.set_byte_enable_ptr(nullptr);
    payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    (*out_.at(hop))->b_transport(payload_, delay);
}

std::optional<std::string> NetworkPort::send(std::uint32_t peer, std::span<const std::byte> data,
                                             std::uint64_t bytes, sc_core::sc_time& delay) {
    auto hop = hops_.find(peer);
    if (hop == hops_.end()) return fmt::format("card {} has no route to card {}", card_, peer);
    transmit(card_, peer, hop->second, data.empty() ? nullptr : data.data(), bytes, delay);
    return std::nullopt;
}

void NetworkPort::b_transport(int, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay) {
    const auto address = payload.get_address();
    const auto origin = std::uint32_t(address >> 32), dest = std::uint32_t(address);
    Arrived a;
    a.message.bytes = payload.get_data_length();
    if (payload.get_data_ptr()) {
        a.message.data.resize(a.message.bytes);
        std::memcpy(a.message.data.data(), payload.get_data_ptr(), a.message.bytes);
    }
    a.at = sc_core::sc_time_stamp() + delay;
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
    if (dest != card_) { // passing through: sent on when it has arrived whole
        passing_.emplace(a.at, Passing{origin, dest, std::move(a)});
        passing_arrived_.notify(sc_core::SC_ZERO_TIME);
        return;
    }
    auto& box = inboxes_[origin];
    box.queue.push_back(std::move(a));
    box.arrived.notify(delay);
}

void NetworkPort::forward() {
    for (;;) {
        if (passing_.empty()) {
            sc_core::wait(passing_arrived_);
            continue;
        }
        const auto at = passing_.begin()->first;
        if (at > sc_core::sc_time_stamp()) { // a message arriving earlier may still be announced
            sc_core::wait(at - sc_core::sc_time_stamp(), passing_arrived_);
            continue;
        }
        auto node = passing_.extract(passing_.begin());
        auto& p = node.mapped();
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        transmit(p.origin, p.to, hops_.at(p.to),
                 p.arrived.message.data.empty() ? nullptr : p.arrived.message.data.data(),
                 p.arrived.message.bytes, delay);
        ++forwarded_;
    }
}

std::optional<std::string> NetworkPort::receive(std::uint32_t peer, Message& out) {
    auto b = inboxes_.find(peer);
    if (b == inboxes_.end()) return fmt::format("card {} has no route from card {}", card_, peer);
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
