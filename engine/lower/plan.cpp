#include "engine/lower/plan.hpp"

#include "engine/error.hpp"
#include "engine/lower/lowering.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <set>

namespace cardsim::lower {

namespace {

/// `text` with every `×` spelt `x`.
std::string ascii_plan(std::string_view text) {
    constexpr std::string_view times = "×";
    std::string t;
    for (std::size_t i = 0; i < text.size();) {
        const bool x = text.substr(i, times.size()) == times;
        t += x ? 'x' : text[i];
        i += x ? times.size() : 1;
    }
    return t;
}

/// The number of 1 to 4 digits `d`, or nothing.
std::optional<std::size_t> small_number(std::string_view d) {
    if (d.empty() || d.size() > 4 ||
        !std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::stoul(std::string(d));
}

/// The T and P of `tpTxppP` (or `epTxppP`, experts split by index), or nothing.
std::optional<Plan> explicit_split(std::string_view t) {
    const auto x = t.find("xpp");
    if ((t.substr(0, 2) != "tp" && t.substr(0, 2) != "ep") || x == std::string_view::npos)
        return std::nullopt;
    auto tensor = small_number(t.substr(2, x - 2)), stages = small_number(t.substr(x + 3));
    if (!tensor || !stages) return std::nullopt;
    return Plan{*tensor, *stages, t[0] == 'e'};
}

} // namespace

bool spells_plan(std::string_view text) {
    const auto t = ascii_plan(text);
    return t == "one" || t == "pp" || t == "tp" || t == "tpxpp" || t == "ep" || t == "epxpp" ||
           explicit_split(t).has_value();
}

Plan parse_plan(std::string_view text, std::size_t cards) {
    if (!spells_plan(text))
        throw Error(
            fmt::format("--plan {}: expected one (a single card), pp (layers split across the cards), "
                        "tp (heads and MLP columns split across the cards), ep (as tp, but each "
                        "layer's experts split by index), tp×pp or ep×pp (pairs of cards split the "
                        "heads and columns, or experts, the pairs split the layers) or tpT×ppP, "
                        "epT×ppP (groups of T cards in P stages, T·P = system.cards)",
                        text));
    const auto t = ascii_plan(text);
    const bool experts = t[0] == 'e';
    if (t == "one") return {1, 1};
    if (t == "pp") return {1, cards};
    if (t == "tp" || t == "ep") return {cards, 1, experts};
    if (t == "tpxpp" || t == "epxpp") {
        if (cards < 4 || cards % 2 != 0)
            throw Error(fmt::format("--plan {}: groups of 2 cards in at least 2 stages need an even "
                                    "system.cards of 4 or more, and system.cards = {}",
                                    text, cards));
        return {2, cards / 2, experts};
    }
    const auto p = *explicit_split(t);
    if (p.tensor < 2 && p.experts)
        throw Error(fmt::format("--plan {}: experts split by index need groups of 2 cards or more", text));
    if (p.tensor == 0 || p.stages == 0 || p.cards() != cards)
        throw Error(
            fmt::format("--plan {}: {} × {} cards, and system.cards = {}", text, p.tensor, p.stages, cards));
    return p;
}

std::string name(const Plan& p) {
    if (p.one()) return "one";
    if (p.tensor == 1) return "pp";
    const char* split = p.experts ? "ep" : "tp";
    if (p.stages == 1) return split;
    return fmt::format("{}{}xpp{}", split, p.tensor, p.stages);
}

std::uint32_t card_of(const Plan& p, std::size_t stage, std::size_t rank) {
    return std::uint32_t(stage * p.tensor + (stage % 2 == 1 ? p.tensor - 1 - rank : rank));
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
                        "cut (where a layer starts and only the residual stream crosses)",
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
        s.from = std::uint32_t(k > 0 ? k - 1 : 0);
        s.to = std::uint32_t(k + 1 < cards ? k + 1 : 0);
        s.outputs = k + 1 == cards;
        s.weight_elements = before[s.end_op] - before[s.first_op];
        stages.push_back(std::move(s));
    }
    return stages;
}

std::vector<Stage> system_stages(std::span<const graph::Graph* const> graphs, const graph::WeightSource& ws,
                                 const Plan& p) {
    if (graphs.size() != p.tensor)
        throw Error(fmt::format("a plan of {} × {} cards takes a graph for each of its {} ranks; given {}",
                                p.tensor, p.stages, p.tensor, graphs.size()));
    for (auto* g : graphs)
        if (g->ops.size() != graphs[0]->ops.size())
            throw Error(
                fmt::format("the ranks' graphs of a {} × {} plan differ ({} and {} ops): they are cut "
                            "at the same ops",
                            p.tensor, p.stages, graphs[0]->ops.size(), g->ops.size()));
    const auto cuts = pipeline_stages(*graphs[0], ws, p.stages);
    std::vector<Stage> out(p.cards());
    for (std::size_t s = 0; s < p.stages; ++s)
        for (std::size_t r = 0; r < p.tensor; ++r) {
            const auto& g = *graphs[r];
            Stage st;
            st.card = card_of(p, s, r);
            st.cards = p.cards();
            st.first_op = cuts[s].first_op;
            st.end_op = cuts[s].end_op;
            if (s > 0) {
                st.receives = crossing(g, st.first_op);
                st.from = card_of(p, s - 1, r);
            }
            if (s + 1 < p.stages) {
                st.sends = crossing(g, st.end_op);
                st.to = card_of(p, s + 1, r);
            }
            if (p.tensor > 1)
                for (std::size_t q = 0; q < p.tensor; ++q)
                    st.group.push_back(card_of(p, s, q));
            st.rank = r;
            st.outputs = st.card + 1 == p.cards();
            for (std::size_t i = st.first_op; i < st.end_op; ++i)
                for (auto& weight : graph::weights(g.ops[i]))
                    st.weight_elements += ws.view_of(weight.tensor, weight.view).numel();
            out[st.card] = std::move(st);
        }
    return out;
}

std::vector<Compiled> lower_system(std::span<const graph::Graph* const> graphs,
                                   const graph::WeightSource& weights, const Target& target,
                                   const Options& options, const std::vector<Stage>& stages,
                                   bool refuse_over_capacity) {
    if (!options.probes.empty()) throw Error("a plan over several cards observes no values (probes)");
    std::vector<Compiled> out;
    for (auto& s : stages) {
        Options o = options;
        o.stage = s;
        try {
            out.push_back(detail::Lowering(*graphs[s.rank], weights, target, o, refuse_over_capacity).run());
        } catch (const Refusal& r) {
            throw Refusal(fmt::format("card {} of {}: {}", s.card, s.cards, r.what()));
        }
    }
    return out;
}

std::vector<Compiled> lower_stages(const graph::Graph& g, const graph::WeightSource& weights,
                                   const Target& target, const Options& options,
                                   const std::vector<Stage>& stages) {
    const graph::Graph* one = &g;
    return lower_system(std::span(&one, 1), weights, target, options, stages);
}

std::vector<Compiled> lower_shards(std::span<const graph::Graph* const> cards,
                                   const graph::WeightSource& weights, const Target& target,
                                   const Options& options, bool refuse_over_capacity) {
    return lower_system(cards, weights, target, options, system_stages(cards, weights, Plan{cards.size(), 1}),
                        refuse_over_capacity);
}

std::vector<Capacity> stage_capacity(const graph::Graph& g, const graph::WeightSource& weights,
                                     const Target& target, Options options,
                                     const std::vector<Stage>& stages) {
    options.shapes_only = true;
    options.probes.clear();
    const graph::Graph* one = &g;
    std::vector<Capacity> out;
    for (auto& c : lower_system(std::span(&one, 1), weights, target, options, stages, false))
        out.push_back(c.capacity);
    return out;
}

} // namespace cardsim::lower
