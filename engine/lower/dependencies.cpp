#include "engine/lower/dependencies.hpp"

#include <algorithm>

namespace cardsim::lower {
namespace {

using program::Access;
using program::Region;

/// A past access to bytes `lo .. hi` of a region by command `cmd`.
struct Past {
    Region region;
    std::uint64_t lo, hi;
    std::uint32_t cmd;
    bool write;
};

bool overlaps(const Past& a, Region r, std::uint64_t lo, std::uint64_t hi) {
    return a.region == r && a.lo < hi && lo < a.hi;
}

} // namespace

void add_dependencies(program::Program& p) {
    std::vector<Past> live;
    for (std::uint32_t i = 0; i < p.commands.size(); ++i) {
        auto& c = p.commands[i];
        std::vector<std::uint32_t> deps;
        for (auto& o : c.operands) {
            if (o.region == Region::None || o.region == Region::Weights || o.bytes == 0) continue;
            bool writes = o.access != Access::Read;
            for (auto& a : live)
                if (overlaps(a, o.region, o.offset, o.offset + o.bytes) && (writes || a.write))
                    deps.push_back(a.cmd);
        }
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        c.deps = std::move(deps);
        // Record this command's accesses; a write forgets what it fully covers (whoever touches
        // those bytes next depends on this command, which already waits for the forgotten ones).
        for (auto& o : c.operands) {
            if (o.region == Region::None || o.region == Region::Weights || o.bytes == 0) continue;
            bool writes = o.access != Access::Read;
            std::uint64_t lo = o.offset, hi = o.offset + o.bytes;
            if (writes)
                std::erase_if(live, [&](const Past& a) {
                    return a.region == o.region && a.cmd != i && lo <= a.lo && a.hi <= hi;
                });
            live.push_back(Past{o.region, lo, hi, i, writes});
        }
    }
}

} // namespace cardsim::lower
