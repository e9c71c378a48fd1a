#pragma once
// A card's network ports: the card's side of its links (sim/card/network.hpp's Network), and the
// forwarding of messages between cards that no link joins directly.

#include "sim/card/network.hpp"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::sim::system {

/// Card `card`'s ports: one initiator socket per outgoing link (to a neighbour), and one target
/// socket every incoming link binds to. A message to a card that is not a neighbour leaves over
/// the link to its route's first hop (`hops`: destination → neighbour); a card on the way stores
/// it whole and sends it on, in arrival order, once it has arrived (store and forward: each hop
/// costs its link's frames and latency; the card's network unit is not involved). A message
/// arriving for this card from card `s` waits in `s`'s inbox (in order) until the card's network
/// unit receives it, at or after its arrival.
class NetworkPort : public sc_core::sc_module, public Network {
public:
    SC_HAS_PROCESS(NetworkPort);

    /// Every incoming link binds here (none: a card no link reaches, e.g. the odd card of pairs).
    tlm_utils::multi_passthrough_target_socket<NetworkPort, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        in;

    /// Card `card`'s ports with a link to each card of `to`, receiving from each card of `from`
    /// (every card with a route to it), sending to each destination of `hops` over its first hop.
    NetworkPort(const sc_core::sc_module_name& name, std::uint32_t card, const std::vector<std::uint32_t>& to,
                const std::vector<std::uint32_t>& from, std::map<std::uint32_t, std::uint32_t> hops);

    /// The outgoing socket of the link to card `peer` (bind it to the link's `in`).
    tlm_utils::simple_initiator_socket<NetworkPort>& to(std::uint32_t peer) { return *out_.at(peer); }

    std::optional<std::string> send(std::uint32_t peer, std::span<const std::byte> data, std::uint64_t bytes,
                                    sc_core::sc_time& delay) override;
    std::optional<std::string> receive(std::uint32_t peer, Message& out) override;

    /// Messages this card sent on for others.
    std::uint64_t forwarded() const { return forwarded_; }

private:
    struct Arrived {
        Message message;
        sc_core::sc_time at;
    };
    struct Inbox {
        std::deque<Arrived> queue;
        sc_core::sc_event arrived;
    };
    /// A message passing through, for card `to` from card `origin`.
    struct Passing {
        std::uint32_t origin = 0, to = 0;
        Arrived arrived;
    };
    void b_transport(int id, tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);
    /// Sends each passing message on over its next hop once it has arrived, earliest first.
    void forward();
    /// Puts `bytes` (`data`, or none) from card `origin` for card `dest` on the link to `hop`.
    void transmit(std::uint32_t origin, std::uint32_t dest, std::uint32_t hop, const std::byte* data,
                  std::uint64_t bytes, sc_core::sc_time& delay);

    std::uint32_t card_;
    std::map<std::uint32_t, std::unique_ptr<tlm_utils::simple_initiator_socket<NetworkPort>>> out_;
    std::map<std::uint32_t, std::uint32_t> hops_;
    std::map<std::uint32_t, Inbox> inboxes_;
    std::multimap<sc_core::sc_time, Passing> passing_;
    sc_core::sc_event passing_arrived_;
    std::uint64_t forwarded_ = 0;
    tlm::tlm_generic_payload payload_;
};

} // namespace cardsim::sim::system
