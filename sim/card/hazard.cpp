#include "sim/card/hazard.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::sim {

std::optional<std::string> race(const CardContext& ctx, std::uint32_t a, std::uint32_t b) {
    using program::Access;
    using program::Region;
    const auto& ca = ctx.program->commands[a];
    const auto& cb = ctx.program->commands[b];
    for (std::size_t i = 0; i < ca.operands.size(); ++i) {
        const auto& x = ca.operands[i];
        if (x.region == Region::None || x.bytes == 0) continue;
        const auto& rx = ctx.region(x.region);
        const std::uint64_t x0 = rx.base + x.offset, x1 = x0 + x.bytes;
        for (std::size_t j = 0; j < cb.operands.size(); ++j) {
            const auto& y = cb.operands[j];
            if (y.region == Region::None || y.bytes == 0) continue;
            if (x.access == Access::Read && y.access == Access::Read) continue;
            const auto& ry = ctx.region(y.region);
            if (rx.space != ry.space) continue;
            const std::uint64_t y0 = ry.base + y.offset, y1 = y0 + y.bytes;
            if (x1 <= y0 || y1 <= x0) continue;
            const std::uint64_t lo = std::max(x0, y0), hi = std::min(x1, y1);
            auto slot = [](const program::Command& c, std::size_t k) {
                return program::spec(c.opcode).operands[k].name;
            };
            auto verb = [](Access acc) { return acc == Access::Read ? "reads" : "writes"; };
            return fmt::format(
                "race at step {}: commands {} ({}) and {} ({}) are in flight together with no dependency "
                "between them, and both touch {}+{:#x}..{:#x} ({} bytes): command {} {} it ({}), command {} "
                "{} it "
                "({}); the hardware would compute garbage there (a dependency is missing)",
                ctx.step, a, program::name(ca.opcode), b, program::name(cb.opcode), program::name(x.region),
                lo - rx.base, hi - rx.base, hi - lo, a, verb(x.access), slot(ca, i), b, verb(y.access),
                slot(cb, j));
        }
    }
    return std::nullopt;
}

} // namespace cardsim::sim
