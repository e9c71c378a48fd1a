#include "sim/card/work.hpp"

#include <algorithm>

namespace cardsim::sim {

using program::Opcode;

std::uint64_t work(const program::Command& c, std::span<const std::uint32_t> positions) {
    auto d = [&](std::size_t i) { return i < c.dims.size() ? c.dims[i] : 0; };
    switch (c.opcode) {
    case Opcode::Copy:
        return c.operands.empty() ? 0 : c.operands[0].bytes;
    case Opcode::Matvec:
        return d(0) * d(1) * d(2);
    case Opcode::Attend: {
        std::uint64_t rows = d(0), heads = d(1), head_dim = d(3), window = d(5), total = 0;
        for (std::uint64_t r = 0; r < rows; ++r) {
            std::uint64_t len = (r < positions.size() ? positions[r] : 0) + 1;
            if (window) len = std::min(len, window);
            total += heads * 2 * len * head_dim;
        }
        return total;
    }
    case Opcode::SelfAttention: {
        // Every row attends its whole sequence (or its window): bounded by rows² per sequence; the
        // row count of each sequence is the io's business, so take the bucket's worst case.
        std::uint64_t rows = d(0), seqs = std::max<std::uint64_t>(d(1), 1), heads = d(2), head_dim = d(3),
                      window = d(4);
        std::uint64_t per_seq = (rows + seqs - 1) / seqs,
                      len = window ? std::min(per_seq, 2 * window + 1) : per_seq;
        return rows * heads * 2 * len * head_dim;
    }
    case Opcode::Conv:
        return d(0) * d(1);
    case Opcode::DeltaStep:
        return d(0) * d(2) * d(3) * d(4);
    case Opcode::Gates:
        return d(0) * d(1);
    case Opcode::Rotate:
        return d(0) * d(1) * d(3);
    case Opcode::Rope:
        return d(0) * 2 * d(1) * d(2);
    case Opcode::CacheAppend:
        return d(0) * d(1) * d(2);
    case Opcode::AddType:
        return d(0) * d(2);
    case Opcode::GatherMarkers:
        return d(0) * d(1);
    case Opcode::ActFeatures:
        return d(0) * (d(2) + 4) + d(1);
    case Opcode::Embed:
    case Opcode::RmsNorm:
    case Opcode::LayerNorm:
    case Opcode::Silu:
    case Opcode::L2Norm:
    case Opcode::GatedNorm:
    case Opcode::SigmoidGate:
    case Opcode::SiluMul:
    case Opcode::Add:
    case Opcode::ArgMax:
    case Opcode::Gelu:
    case Opcode::GeGlu:
        return d(0) * d(1);
    }
    return 0;
}

std::uint64_t compute_cycles(std::uint64_t work, std::uint32_t width) {
    if (width == 0) width = 1;
    return std::max<std::uint64_t>(1, (work + width - 1) / width);
}

} // namespace cardsim::sim
