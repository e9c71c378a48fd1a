#pragma once
// The card's address space over its DDR channels: consecutive granules go to consecutive channels.

#include <bit>
#include <cstdint>
#include <span>

namespace cardsim::sim::memory {

/// Maps a card address to (channel, channel-local address) with granule interleaving: granule g
/// (address / granule) lives on channel g mod N at local granule g div N. The granules one request
/// puts on one channel are consecutive there, so a request touches each channel in at most one
/// contiguous local range.
class ChannelInterleave {
public:
    ChannelInterleave(std::uint32_t channels, std::uint64_t granule, std::uint64_t channel_bytes);

    /// A place in one channel.
    struct Location {
        std::uint32_t channel;
        std::uint64_t local;
    };
    /// A channel-local byte range [begin, end).
    struct Range {
        std::uint64_t begin = 0;
        std::uint64_t end = 0;
        std::uint64_t size() const { return end - begin; }
        bool empty() const { return end == begin; }
    };

    Location locate(std::uint64_t address) const {
        const std::uint64_t g = granule_of(address);
        const std::uint64_t offset = address - g * granule_;
        if (channel_shift_ >= 0)
            return {static_cast<std::uint32_t>(g & (channels_ - 1)),
                    (g >> channel_shift_) * granule_ + offset};
        return {static_cast<std::uint32_t>(g % channels_), (g / channels_) * granule_ + offset};
    }
    /// The card address of channel-local byte `local` of `channel`.
    std::uint64_t global(std::uint32_t channel, std::uint64_t local) const {
        const std::uint64_t g = local / granule_;
        return (g * channels_ + channel) * granule_ + local % granule_;
    }
    /// Whether [address, address + length) lies in one granule (so one channel); length >= 1.
    bool single(std::uint64_t address, std::uint64_t length) const {
        return granule_of(address) == granule_of(address + length - 1);
    }
    /// The local range each channel holds of [address, address + length) (length >= 1); `out`
    /// has one entry per channel, empty for the channels the request misses.
    void split(std::uint64_t address, std::uint64_t length, std::span<Range> out) const;
    /// Calls f(channel, local, offset, bytes) for each granule piece of the request, in address
    /// order (`offset` is the piece's position in the request).
    template <class F>
    void for_each_piece(std::uint64_t address, std::uint64_t length, F&& f) const {
        std::uint64_t offset = 0;
        while (offset < length) {
            const Location at = locate(address + offset);
            const std::uint64_t room = granule_ - (address + offset) % granule_;
            const std::uint64_t n = room < length - offset ? room : length - offset;
            f(at.channel, at.local, offset, n);
            offset += n;
        }
    }

    std::uint32_t channels() const { return channels_; }
    std::uint64_t granule() const { return granule_; }
    /// Bytes of the whole address space.
    std::uint64_t total_bytes() const { return channel_bytes_ * channels_; }

private:
    std::uint64_t granule_of(std::uint64_t a) const { return shift_ ? a >> shift_ : a / granule_; }
    std::uint32_t channels_;
    std::uint64_t granule_;
    std::uint64_t channel_bytes_;
    std::uint32_t shift_ = 0; ///< log2 granule when a power of two, else 0
    int channel_shift_ = -1;  ///< log2 channels when a power of two, else -1
};

} // namespace cardsim::sim::memory
