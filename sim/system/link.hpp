#pragma once
// One direction of a card-to-card link: a TLM-2.0 module between one card's network port and
// another's, with the link's data rate, framing and per-hop latency from the config's `[link]`.

#include "engine/card/card_config.hpp"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <vector>

namespace cardsim::sim::system {

/// One message's time on a link's wire: from its first byte out to its last, and its bytes.
struct LinkMessage {
    sc_core::sc_time start, end;
    std::uint64_t bytes = 0;
};

/// What a link carried over a run.
struct LinkTotals {
    std::uint32_t from = 0, to = 0; ///< the cards it joins, in its direction
    std::uint32_t ports = 0;        ///< port links striped in parallel
    std::uint64_t messages = 0, bytes = 0, frames = 0;
    double busy_seconds = 0;       ///< time its wire was sending
    std::vector<LinkMessage> sent; ///< each message in order, when the link keeps them (a trace's)
};

/// A link from card `from` to card `to` over `ports` parallel port links. A sender's
/// `b_transport` on `in` (payload: the message, address: the sending card) waits for the wire to
/// be free (messages leave in order), sends the message's frames (payload split into frames of
/// `frame_payload_bytes`, each with `frame_overhead_bytes`) at `gbps` a port, and hands it to `out`
/// annotated with its arrival: the last byte out plus `latency_ns`. The sender's delay comes back
/// as the time its last byte left. Event-free: the link is a time calculation on its busy time.
class Link : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<Link> in;
    tlm_utils::simple_initiator_socket<Link> out;

    Link(const sc_core::sc_module_name& name, const card::LinkConfig& config, std::uint32_t from,
         std::uint32_t to, std::uint32_t ports);

    const LinkTotals& totals() const { return totals_; }
    /// Keep each message's wire interval in `totals().sent` (off: host memory flat over a run).
    void keep_messages(bool keep) { keep_ = keep; }

private:
    void b_transport(tlm::tlm_generic_payload& payload, sc_core::sc_time& delay);

    card::LinkConfig config_;
    LinkTotals totals_;
    sc_core::sc_time free_at_ = sc_core::SC_ZERO_TIME; ///< when the wire has sent all it was given
    bool keep_ = false;
};

} // namespace cardsim::sim::system
