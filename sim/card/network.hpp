#pragma once
// What a card's network unit sees of the system it is in: messages to and from other cards by
// their index. The card does not know how many cards exist or how they are joined; the system
// (sim/system/) implements this over its links.

#include <systemc>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::sim {

/// One message as it arrived: its bytes (empty in a timing-only run) and how many it carried.
struct Message {
    std::vector<std::byte> data;
    std::uint64_t bytes = 0;
};

/// The card's network ports, as its network unit uses them (call from a SystemC thread).
class Network {
public:
    virtual ~Network() = default;
    /// Sends `bytes` bytes (`data`, or none in a timing-only run) to card `peer`, leaving at
    /// now + `delay`; on return `delay` is when the last byte has left the card. An error
    /// sentence when the card has no route to `peer`.
    virtual std::optional<std::string> send(std::uint32_t peer, std::span<const std::byte> data,
                                            std::uint64_t bytes, sc_core::sc_time& delay) = 0;
    /// Waits until the next message from card `peer` has arrived whole and takes it; an error
    /// sentence (and no wait) when the card has no route from `peer`.
    virtual std::optional<std::string> receive(std::uint32_t peer, Message& out) = 0;
};

} // namespace cardsim::sim
