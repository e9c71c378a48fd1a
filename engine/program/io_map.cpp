#include "engine/program/io_map.hpp"

#include <fmt/core.h>

#include <optional>

namespace cardsim::program {

IoMap io_map(const Host& host) {
    IoMap m;
    auto place = [](const IoEntry& e) { return Place{Region::Io, e.offset, e.bytes}; };
    for (auto [role, p] :
         {std::pair{IoRole::Ids, &m.ids}, std::pair{IoRole::Positions, &m.positions},
          std::pair{IoRole::SeqStarts, &m.seq_starts}, std::pair{IoRole::Qtype, &m.qtype},
          std::pair{IoRole::MarkerRows, &m.marker_rows}, std::pair{IoRole::MarkerStarts, &m.marker_starts},
          std::pair{IoRole::Slots, &m.slots}})
        if (auto* e = host.entry(role)) *p = place(*e);
    if (auto* e = host.entry(IoRole::Slots)) m.slot_count = e->width;
    for (auto& e : host.io)
        if (is_graph_output(e.role)) m.outputs.emplace_back(graph::Val{e.value}, place(e));
    for (auto& e : host.io)
        if (e.role == IoRole::Probe) {
            m.outputs.emplace_back(graph::Val{e.value}, place(e));
            m.probes.push_back(
                graph::Probe{graph::Val{e.value}, e.after,
                             e.layer == no_index ? std::nullopt : std::optional<std::size_t>(e.layer)});
        }
    return m;
}

std::optional<std::string> slots_refusal(const IoMap& m, std::span<const std::uint32_t> slots) {
    const std::size_t rows = m.slots.bytes / 4;
    if (rows == 0) {
        if (slots.empty()) return std::nullopt;
        return fmt::format("{} slots are given, and the program has no slots input (it was lowered "
                           "without slots)",
                           slots.size());
    }
    if (slots.size() != rows)
        return fmt::format("{} slots are given, the program takes one per token row ({})", slots.size(),
                           rows);
    for (std::size_t r = 0; r < rows; ++r)
        if (slots[r] > m.pad_slot())
            return fmt::format("row {} names slot {}, and the stores hold slots 0 .. {} ({} the pad slot)", r,
                               slots[r], m.pad_slot(), m.pad_slot());
    return std::nullopt;
}

} // namespace cardsim::program
