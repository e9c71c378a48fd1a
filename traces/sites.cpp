#include "traces/sites.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>

namespace cardsim::traces {
namespace {

using program::IoRole;

/// The host map's output or probe entry that a write of `op` lands in, if any.
const program::IoEntry* read_back_entry(const program::Program& p, const program::Operand& op) {
    if (op.region != program::Region::Io || op.access == program::Access::Read) return nullptr;
    for (auto& e : p.host.io)
        if (!program::is_input(e.role) && op.offset < e.offset + e.bytes && e.offset < op.offset + op.bytes)
            return &e;
    return nullptr;
}

/// What a command's writes hand to the host, and the layer when it copies a layer's probe.
struct Copy {
    std::string what;
    std::optional<std::uint32_t> layer;
};

std::optional<Copy> copy_of(const program::Program& p, const program::Command& c) {
    for (auto& op : c.operands)
        if (auto* e = read_back_entry(p, op)) {
            if (e->role != IoRole::Probe) return Copy{std::string(program::name(e->role)), std::nullopt};
            if (e->layer == program::no_index) return Copy{"probe", std::nullopt};
            return Copy{fmt::format("probe of layer {}", e->layer), e->layer};
        }
    return std::nullopt;
}

} // namespace

ProgramSites sites_of(const program::Program& p) {
    ProgramSites s;
    s.program = program::digest(p);
    s.commands.resize(p.commands.size());
    std::vector<std::pair<std::size_t, std::uint32_t>> probes; // (pc, layer) of each layer probe's copy
    for (std::size_t pc = 0; pc < p.commands.size(); ++pc)
        if (auto c = copy_of(p, p.commands[pc])) {
            s.commands[pc].copies = c->what;
            if (c->layer) probes.emplace_back(pc, *c->layer);
        }
    if (probes.empty()) return s;
    for (std::size_t pc = 0; pc < p.commands.size(); ++pc) {
        auto next = std::lower_bound(probes.begin(), probes.end(), std::pair{pc, std::uint32_t{0}});
        auto& label = s.commands[pc].layer;
        if (next == probes.end()) {
            label = fmt::format(">{}", probes.back().second);
            continue;
        }
        std::uint32_t to = next->second;
        if (next->first == pc || next == probes.begin()) {
            label = next->first == pc ? std::to_string(to) : fmt::format("<={}", to);
            continue;
        }
        std::uint32_t from = std::prev(next)->second + 1;
        label = from >= to ? std::to_string(to) : fmt::format("{}-{}", from, to);
    }
    return s;
}

} // namespace cardsim::traces
