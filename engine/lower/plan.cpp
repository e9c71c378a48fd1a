#include "engine/lower/plan.hpp"

#include "engine/error.hpp"
#include "engine/lower/lowering.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace cardsim::lower {

Plan parse_plan(std::string_view text) {
    if (text == "pp") return Plan::Pipeline;
    if (text == "tp") return Plan::Tensor;
    if (text == "one") return Plan::One;
    throw Error(fmt::format("--plan {}: expected pp (layers split across the cards), tp (heads and MLP "
                            "columns split across the cards) or one (a single card); tp×pp is not built yet",
                            text));
}

std::string_view name(Plan plan) {
    return plan == Plan::Pipeline ? "pp" : plan == Plan::Tensor ? "tp" : "one";
}

namespace {

/// The values live across a cut before op `at`: written by an op before it, read by one at or after.
std::vector<graph::Val> crossing(const graph::Graph& g, std::size_t at) {
    std::set<graph::Val> written, out;
    for (std::size_t i = 0; i < at; ++i)
        for (auto v : graph::uses(g.ops[i]).writes)
            written.insert(v);
    for (std::size_t i = at; i < g.ops.size(); ++i)
        for (auto v : graph::uses(g.ops[i]).reads)
            if (written.count(v)) out.insert(v);
    return {out.begin(), out.end()};
}

} // namespace

std::vector<Stage> pipeline_stages(const graph::Graph& g, const graph::WeightSource& ws, std::size_t cards) {
    if (cards == 0) throw Error("a pipeline needs at least one card");
    // Each op's weight elements, and the ops where a layer starts (the cut candidates): the first
    // op of a layer after the first, and the first op of the head after the last layer.
    std::vector<std::uint64_t> before(g.ops.size() + 1, 0); // weight elements of ops before i
    std::vector<std::size_t> cuts;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        std::uint64_t w = 0;
        for (auto& weight : graph::weights(g.ops[i]))
            w += ws.view_of(weight.tensor, weight.view).numel();
        before[i + 1] = before[i] + w;
        if (i == 0) continue;
        const auto& s = g.sites[i];
        const auto& p = g.sites[i - 1];
        const bool starts_layer = s.layer && (!p.layer || *p.layer != *s.layer);
        if (!starts_layer) continue;
        // Only where activations of token rows alone cross (the residual stream).
        auto vals = crossing(g, i);
        if (vals.empty() || std::any_of(vals.begin(), vals.end(),
                                        [&](graph::Val v) { return g.shape(v).rows != graph::Rows::Tokens; }))
            continue;
        if (std::find(cuts.begin(), cuts.end(), i) == cuts.end()) cuts.push_back(i);
    }
    if (cards > cuts.size() + 1)
        throw Error(
            fmt::format("a pipeline of {} cards needs {} cuts between layers; the model has {} places to "
                        "cut (one fewer than its layers)",
                        cards, cards - 1, cuts.size()));
    // Cut k (1 .. cards - 1) at the candidate nearest k/cards of the weights, after the cut before.
    const double total = double(before.back());
    std::vector<std::size_t> at{0};
    std::size_t from = 0; // the first candidate still free
    for (std::size_t k = 1; k < cards; ++k) {
        const double target = total * double(k) / double(cards);
        std::size_t best = from;
        // Leave enough candidates for the cards after this one.
        const std::size_t last_allowed = cuts.size() - (cards - 1 - k) - 1;
        for (std::size_t c = from; c <= last_allowed; ++c)
            if (std::abs(double(before[cuts[c]]) - target) < std::abs(double(before[cuts[best]]) - target))
                best = c;
        at.push_back(cuts[best]);
        from = best + 1;
    }
    at.push_back(g.ops.size());
    std::vector<Stage> stages;
    for (std::size_t k = 0; k < cards; ++k) {
        Stage s;
        s.card = k;
        s.cards = cards;
        s.first_op = at[k];
        s.end_op = at[k + 1];
        if (k > 0) s.receives = crossing(g, s.first_op);
        if (k + 1 < cards) s.sends = crossing(g, s.end_op);
        s.weight_elements = before[s.end_op] - before[s.first_op];
        stages.push_back(std::move(s));
    }
    return stages;
}

std::vector<Compiled> lower_stages(const graph::Graph& g, const graph::WeightSource& weights,
                                   const Target& target, const Options& options,
                                   const std::vector<Stage>& stages) {
    if (!options.probes.empty()) throw Error("a plan over several cards observes no values (probes)");
    std::vector<Compiled> out;
    for (auto& s : stages) {
        Options o = options;
        o.stage = s;
        try {
            out.push_back(detail::Lowering(g, weights, target, o).run());
        } catch (const Refusal& r) {
            throw Refusal(fmt::format("card {} of {}: {}", s.card, s.cards, r.what()));
        }
    }
    return out;
}

std::vector<Compiled> lower_shards(std::span<const graph::Graph* const> cards,
                                   const graph::WeightSource& weights, const Target& target,
                                   const Options& options, bool refuse_over_capacity) {
    if (!options.probes.empty()) throw Error("a plan over several cards observes no values (probes)");
    std::vector<Compiled> out;
    for (std::size_t k = 0; k < cards.size(); ++k) {
        Options o = options;
        Stage s;
        s.card = k;
        s.cards = cards.size();
        s.first_op = 0;
        s.end_op = cards[k]->ops.size();
        o.stage = s;
        try {
            out.push_back(detail::Lowering(*cards[k], weights, target, o, refuse_over_capacity).run());
        } catch (const Refusal& r) {
            throw Refusal(fmt::format("card {} of {}: {}", k, cards.size(), r.what()));
        }
    }
    return out;
}

std::vector<Capacity> stage_capacity(const graph::Graph& g, const graph::WeightSource& weights,
                                     const Target& target, Options options,
                                     const std::vector<Stage>& stages) {
    options.shapes_only = true;
    options.probes.clear();
    std::vector<Capacity> out;
    for (auto& s : stages) {
        Options o = options;
        o.stage = s;
        out.push_back(detail::Lowering(g, weights, target, o, false).run().capacity);
    }
    return out;
}

} // namespace cardsim::lower
