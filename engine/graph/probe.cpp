#include "engine/graph/probe.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::graph {

std::size_t layer_count(const Graph& g) {
    std::size_t n = 0;
    for (auto& s : g.sites)
        if (s.layer) n = std::max(n, *s.layer + 1);
    return n;
}

Probe layer_output(const Graph& g, std::size_t layer) {
    std::optional<std::size_t> last;
    for (std::size_t i = 0; i < g.sites.size(); ++i)
        if (g.sites[i].layer == layer) last = i;
    if (!last)
        throw Error(fmt::format("the model has no layer {} (its layers are 0 .. {})", layer,
                                std::max<std::size_t>(layer_count(g), 1) - 1));
    auto writes = uses(g.ops[*last]).writes;
    if (writes.size() != 1)
        throw Error(fmt::format("layer {}'s last op ({}, op {}) writes {} values, so it has no one output",
                                layer, kind(g.ops[*last]), *last, writes.size()));
    return Probe{writes[0], *last, layer};
}

std::optional<std::string> check(const Graph& g, const Probe& p) {
    if (p.after >= g.ops.size())
        return fmt::format("a probe stands after op {}, the graph has {} ops", p.after, g.ops.size());
    if (p.value.id >= g.vals.size())
        return fmt::format("a probe names value {}, the graph has {} values", p.value.id, g.vals.size());
    auto w = uses(g.ops[p.after]).writes;
    if (std::find(w.begin(), w.end(), p.value) == w.end())
        return fmt::format("a probe reads value {} after op {} ({}), which does not write it", p.value.id,
                           p.after, kind(g.ops[p.after]));
    return std::nullopt;
}

} // namespace cardsim::graph
