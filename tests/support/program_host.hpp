#pragma once
// A valid host map for hand-made test programs: an io region and the six step inputs of a bucket
// of one token and one sequence.

#include "engine/program/program.hpp"

namespace cardsim::test {

/// Adds to `p` an io region of `io_bytes` after its last DDR region (when it has none) and a host
/// map with every input of a one-token, one-sequence bucket, 64 bytes apart from the region's start.
inline void add_host(program::Program& p, std::uint64_t io_bytes = 4096) {
    using namespace program;
    if (!p.region(Region::Io)) {
        std::uint64_t end = 0;
        for (auto& r : p.regions)
            if (r.space == Space::Ddr) end = std::max(end, r.base + r.size);
        p.regions.push_back({Region::Io, Space::Ddr, end, io_bytes});
    }
    p.host = Host{};
    p.host.model = "test program";
    p.host.vocab = 100;
    const IoRole inputs[] = {IoRole::Ids,   IoRole::Positions,  IoRole::SeqStarts,
                             IoRole::Qtype, IoRole::MarkerRows, IoRole::MarkerStarts};
    const std::uint64_t u32s[] = {1, 1, 2, 1, 0, 2};
    for (std::size_t i = 0; i < 6; ++i) {
        IoEntry e;
        e.role = inputs[i];
        e.offset = 64 * i;
        e.bytes = 4 * u32s[i];
        p.host.io.push_back(e);
    }
}

} // namespace cardsim::test
