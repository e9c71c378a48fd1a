#include "engine/shim/check.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::shim {

std::string Refusal::text() const {
    if (!site) return fmt::format("model: {}", reason);
    if (site->layer) return fmt::format("layer {}, {}: {}", *site->layer, graph::name(site->part), reason);
    return fmt::format("{}: {}", graph::name(site->part), reason);
}

Support group_support(const graph::Graph& g, const Group& grp, const Capabilities& caps) {
    if (grp.cls == ClassId::AttentionVariantsInline)
        if (auto* a = std::get_if<graph::AttendCache>(&g.ops[grp.ops.front()]))
            return attention_variants(caps, a->window.has_value(), a->sinks.has_value(),
                                      a->softcap.has_value());
    return grp.cls ? supports(*grp.cls, caps) : Support{Native{}};
}

Report check_model(const graph::Graph& g, const Capabilities& caps) {
    auto fusion = fuse(g, caps);
    Report r;
    r.declined = std::move(fusion.declined);
    auto refuse = [&](const graph::Site& site, std::string reason) {
        Refusal f{site, std::move(reason)};
        if (std::find(r.refusals.begin(), r.refusals.end(), f) == r.refusals.end()) r.refusals.push_back(f);
    };
    for (auto& grp : fusion.groups) {
        auto& site = g.sites[grp.ops.front()];
        Support s = group_support(g, grp, caps);
        if (auto* no = std::get_if<Refuse>(&s)) refuse(site, no->reason);
        for (auto i : grp.ops)
            if (auto why = fits(g.ops[i], caps)) refuse(g.sites[i], *why);
        r.groups.push_back(GroupReport{grp, s, commands_of(g, grp, caps)});
    }
    return r;
}

std::string op_kinds(const graph::Graph& g, const Group& grp) {
    std::string s;
    for (std::size_t k = 0; k < grp.ops.size();) {
        auto name = graph::kind(g.ops[grp.ops[k]]);
        std::size_t n = 1;
        while (k + n < grp.ops.size() && graph::kind(g.ops[grp.ops[k + n]]) == name)
            ++n;
        s += (s.empty() ? "" : ", ") + (n > 1 ? fmt::format("{} {}", n, name) : std::string(name));
        k += n;
    }
    return s;
}

namespace {

std::string site_title(const graph::Site& s) {
    return s.layer ? fmt::format("layer {}, {}", *s.layer, graph::name(s.part))
                   : std::string(graph::name(s.part));
}

} // namespace

std::string Report::text(const graph::Graph& g) const {
    return listing(g) + verdict();
}

std::string Report::listing(const graph::Graph& g) const {
    std::string out;
    std::optional<graph::Site> current;
    for (auto& gr : groups) {
        auto& site = g.sites[gr.group.ops.front()];
        if (!current || !(*current == site)) {
            out += site_title(site) + "\n";
            current = site;
        }
        std::string answer, cls = gr.group.cls ? std::string(name(*gr.group.cls)) : "";
        if (std::holds_alternative<Refuse>(gr.support))
            answer = "refused";
        else if (!gr.group.cls)
            answer = "command";
        else if (std::holds_alternative<Native>(gr.support))
            answer = "native";
        else
            answer = "decompose";
        std::string cmds;
        for (auto c : gr.commands)
            cmds += (cmds.empty() ? "" : ", ") + std::string(program::name(c));
        out += fmt::format("  {:<10} {:<24} {} -> {}\n", answer, cls, op_kinds(g, gr.group),
                           cmds.empty() ? "-" : cmds);
        for (auto& d : declined)
            if (std::find(gr.group.ops.begin(), gr.group.ops.end(), d.ops.back()) != gr.group.ops.end())
                out += fmt::format("  {:<10} {:<24} {}\n", "not merged", name(d.cls), d.reason);
    }
    if (!refusals.empty()) {
        out += "refusals:\n";
        for (auto& f : refusals)
            out += "  " + f.text() + "\n";
    }
    return out;
}

std::string Report::verdict() const {
    std::size_t native = 0, decomposed = 0, commands = 0;
    for (auto& gr : groups) {
        commands += gr.commands.size();
        if (!gr.group.cls || std::holds_alternative<Refuse>(gr.support)) continue;
        ++(std::holds_alternative<Native>(gr.support) ? native : decomposed);
    }
    if (runs())
        return fmt::format("verdict: the card runs this model ({} commands a step: {} native merges, {} "
                           "decomposed classes)\n",
                           commands, native, decomposed);
    return fmt::format("verdict: the card refuses this model ({} refusal{})\n", refusals.size(),
                       refusals.size() == 1 ? "" : "s");
}

} // namespace cardsim::shim
