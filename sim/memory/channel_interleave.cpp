#include "sim/memory/channel_interleave.hpp"

namespace cardsim::sim::memory {

ChannelInterleave::ChannelInterleave(std::uint32_t channels, std::uint64_t granule,
                                     std::uint64_t channel_bytes)
    : channels_(channels), granule_(granule), channel_bytes_(channel_bytes) {
    if (std::has_single_bit(granule)) shift_ = static_cast<std::uint32_t>(std::countr_zero(granule));
    if (std::has_single_bit(channels)) channel_shift_ = std::countr_zero(channels);
}

void ChannelInterleave::split(std::uint64_t address, std::uint64_t length, std::span<Range> out) const {
    const std::uint64_t last = address + length - 1;
    const std::uint64_t g0 = granule_of(address);
    const std::uint64_t g1 = granule_of(last);
    for (std::uint32_t c = 0; c < channels_; ++c) {
        // First and last granule of the request on channel c.
        const std::uint64_t first = g0 + (c + channels_ - g0 % channels_) % channels_;
        if (first > g1) {
            out[c] = {};
            continue;
        }
        const std::uint64_t final = g1 - (g1 % channels_ + channels_ - c) % channels_;
        const std::uint64_t begin = (first / channels_) * granule_ + (first == g0 ? address % granule_ : 0);
        const std::uint64_t end =
            (final / channels_) * granule_ + (final == g1 ? last % granule_ + 1 : granule_);
        out[c] = {begin, end};
    }
}

} // namespace cardsim::sim::memory
