#include "engine/program/io_map.hpp"

#include <optional>

namespace cardsim::program {

IoMap io_map(const Host& host) {
    IoMap m;
    auto place = [](const IoEntry& e) { return Place{Region::Io, e.offset, e.bytes}; };
    for (auto [role, p] :
         {std::pair{IoRole::Ids, &m.ids}, std::pair{IoRole::Positions, &m.positions},
          std::pair{IoRole::SeqStarts, &m.seq_starts}, std::pair{IoRole::Qtype, &m.qtype},
          std::pair{IoRole::MarkerRows, &m.marker_rows}, std::pair{IoRole::MarkerStarts, &m.marker_starts}})
        if (auto* e = host.entry(role)) *p = place(*e);
    for (auto& e : host.io)
        if (e.role >= IoRole::Logits && e.role != IoRole::Probe)
            m.outputs.emplace_back(graph::Val{e.value}, place(e));
    for (auto& e : host.io)
        if (e.role == IoRole::Probe) {
            m.outputs.emplace_back(graph::Val{e.value}, place(e));
            m.probes.push_back(
                graph::Probe{graph::Val{e.value}, e.after,
                             e.layer == no_index ? std::nullopt : std::optional<std::size_t>(e.layer)});
        }
    return m;
}

} // namespace cardsim::program
