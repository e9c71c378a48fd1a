#pragma once
// A card's network ports: the card's side of its links (sim/card/network.hpp's Network).

#include "sim/card/network.hpp"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

namespace cardsim::sim::system {

/// Card `card`'s ports: one initiator socket per outgoing link (to a peer card), and one target
/// socket every incoming link binds to. A message arriving from card `s` waits in `s`'s inbox
/// (in order) until the card's network unit receives it, at or after its arrival.
class NetworkPort : public sc_core::sc_module, public Network {
public:
    /// Every incoming link binds here (none: a card no link reaches, e.g. the odd card of pairs).
    tlm_utils::multi_passthrough_target_socket<NetworkPort, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        in;

    /// Card `card`'s ports with a link to each card of `to` and from each card of `from`.
    NetworkPort(const sc_core::sc_module_name& name, std::uint32_t card, const std::vector<std::uint32_t>& to,
                const std::vector<std::uint32_t>& from);

    /// The outgoing socket of the link to card `peer` (bind it to the link's `in`).
    tlm_utils::simple_initiator_socket<NetworkPort>& to(std::uint32_t peer) { return *out_.at(peer); }

    std::optional<std::string> send(std::uint32_t peer, std::span<const std::byte> data, std::uint64_t bytes,
                                    sc_core::sc_time& delay) override;
    std::optional<std::string> receive(std::uint32_t peer, Message& out) override;

private:
    struct Arrived {
        Message message;
        sc_core::sc_time at;
    };
    struct Inbox {
        std::deque<Arrived> queue;
        sc_core::sc_event arrived;
    };
    void b_transport(int id, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

    std::uint32_t card_;
    std::map<std::uint32_t, std::unique_ptr<tlm_utils::simple_initiator_socket<NetworkPort>>> out_;
    std::map<std::uint32_t, Inbox> inboxes_;
    tlm::tlm_generic_payload payload_;
};

} // namespace cardsim::sim::system
