#pragma once
// One memory request as traces and players see it, and a source of requests.

#include <cstdint>
#include <string_view>

namespace cardsim::sim::memory {

/// Which way a request moves data.
enum class Direction : std::uint8_t { Read, Write };

/// A request for `length` bytes at byte `address` of the card's DDR address space, issued at
/// `time_ps` picoseconds after the start of its trace.
struct MemRequest {
    std::uint64_t address = 0;
    std::uint32_t length = 0;
    Direction direction = Direction::Read;
    std::uint64_t time_ps = 0;
    friend bool operator==(const MemRequest&, const MemRequest&) = default;
};

/// Something that yields requests one at a time: a trace reader or a pattern generator.
class RequestSource {
public:
    virtual ~RequestSource() = default;
    /// Fills `out` with the next request; false at the end. Bad input throws cardsim::Error.
    virtual bool next(MemRequest& out) = 0;
};

/// "read" or "write".
inline std::string_view name(Direction d) {
    return d == Direction::Read ? "read" : "write";
}

} // namespace cardsim::sim::memory
