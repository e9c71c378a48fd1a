#include "models/bindings.hpp"

#include <fmt/format.h>

namespace cardsim::models {

std::vector<Binding> bindings(const BuiltGraph& built) {
    const graph::Graph& g = built.graph;
    std::vector<Binding> out;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        const auto& op = g.ops[i];
        auto u = graph::uses(op);
        const auto& vals = u.writes.empty() ? u.reads : u.writes;
        std::string value =
            vals.empty() || vals[0].id >= g.names.size() ? std::string() : g.names[vals[0].id];
        for (const auto& w : graph::weights(op))
            out.push_back(Binding{i, g.sites.at(i), std::string(graph::kind(op)), value, w});
    }
    return out;
}

std::string describe(const graph::Site& site) {
    if (!site.layer) return std::string(graph::name(site.part));
    return fmt::format("layer {} {}", *site.layer, graph::name(site.part));
}

std::string describe(const Binding& b, const graph::WeightSource& source) {
    const auto shape = source.shape(b.weight.tensor);
    return fmt::format("{:<20} {:<13} → {:<22} {} [{}] {}", describe(b.site), b.kind, b.value,
                       source.name(b.weight.tensor), fmt::join(shape, ", "), describe(b.weight.view));
}

} // namespace cardsim::models
