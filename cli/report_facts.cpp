#include "cli/report_facts.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace cardsim::cli {
namespace {

/// The answer of a group as `cardsim check` spells it.
std::string answer(const shim::GroupReport& gr) {
    if (std::holds_alternative<shim::Refuse>(gr.support)) return "refused";
    if (!gr.group.cls) return "command";
    return std::holds_alternative<shim::Native>(gr.support) ? "native" : "decompose";
}

/// Texts once each, in first-occurrence order, with ` (×N)` when repeated.
std::vector<std::string> counted(const std::vector<std::string>& texts) {
    std::vector<std::string> order;
    std::map<std::string, std::size_t> n;
    for (auto& t : texts)
        if (n[t]++ == 0) order.push_back(t);
    for (auto& t : order)
        if (n[t] > 1) t += fmt::format(" (×{})", n[t]);
    return order;
}

} // namespace

std::string layer_ranges(const std::vector<std::size_t>& layers) {
    std::string s;
    for (std::size_t i = 0; i < layers.size();) {
        std::size_t j = i;
        while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
            ++j;
        s += (s.empty() ? "" : ", ") +
             (j > i ? fmt::format("{}-{}", layers[i], layers[j]) : fmt::format("{}", layers[i]));
        i = j + 1;
    }
    return s;
}

traces::report::Verdicts verdicts(const graph::Graph& g, const shim::Report& report) {
    using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
    std::vector<Key> order;
    std::map<Key, std::pair<std::vector<std::size_t>, std::size_t>> rows; // layers, groups
    for (auto& gr : report.groups) {
        auto& site = g.sites[gr.group.ops.front()];
        std::string cmds;
        for (auto c : gr.commands)
            cmds += (cmds.empty() ? "" : ", ") + std::string(program::name(c));
        Key key{std::string(graph::name(site.part)), answer(gr),
                gr.group.cls ? std::string(shim::name(*gr.group.cls)) : "", shim::op_kinds(g, gr.group),
                cmds.empty() ? "-" : cmds};
        auto [it, fresh] = rows.try_emplace(key);
        if (fresh) order.push_back(key);
        auto& layers = it->second.first;
        if (site.layer && std::find(layers.begin(), layers.end(), *site.layer) == layers.end())
            layers.push_back(*site.layer);
        ++it->second.second;
    }
    traces::report::Verdicts v;
    for (auto& key : order) {
        auto& [layers, count] = rows[key];
        std::sort(layers.begin(), layers.end());
        auto& [part, ans, cls, ops, cmds] = key;
        v.rows.push_back({part, layer_ranges(layers), ans, cls, ops, cmds, count});
    }
    std::vector<std::string> declined, refusals;
    for (auto& d : report.declined)
        declined.push_back(fmt::format("{}: {}", shim::name(d.cls), d.reason));
    for (auto& r : report.refusals)
        refusals.push_back(r.text());
    v.declined = counted(declined);
    v.refusals = counted(refusals);
    // The verdict is the last line of `cardsim check`'s listing.
    auto text = report.text(g);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    v.verdict = text.substr(text.rfind('\n') + 1);
    return v;
}

traces::report::HostFacts host_facts(const RunReport& r) {
    // The simulation in all: a --prompt-len prefill's (simulated inside compile) and the run's.
    traces::report::HostFacts h{r.host.simulation, r.run.setup_seconds, r.run.steps_seconds, r.host.load,
                                r.host.compile,    std::nullopt,        std::nullopt,        r.host.weights};
    if (r.prefill) h.prefill_seconds = r.prefill->host_seconds;
    if (r.host.golden_ran) h.golden = r.host.golden;
    if (r.host.reference_ran) h.reference = r.host.reference;
    return h;
}

traces::report::RunFacts run_facts(const RunReport& r, const card::CardConfig& config,
                                   const graph::Graph* g) {
    traces::report::RunFacts f;
    f.model = r.model;
    if (r.program) f.program = r.program->string();
    f.prompt = r.prompt;
    f.generated = r.generated;
    f.fault = r.run.fault;
    f.steps = r.steps;
    f.prefill_steps = r.prefill_steps;
    f.seqs = r.seqs;
    if (r.seqs > 1)
        for (auto& q : r.sequences)
            f.sequences.emplace_back(q.prompt, q.generated);
    f.cycles = r.run.cycles;
    f.seconds = r.run.seconds;
    f.step_end = r.run.step_end;
    f.ddr_bytes = r.ddr_bytes;
    f.peak_bytes_per_second = r.peak_bytes_per_second;
    f.arena_bytes = r.arena_bytes;
    for (auto& c : r.run.channels)
        f.channels.push_back({c.read_bytes, c.write_bytes, c.row_hits, c.row_misses, c.row_conflicts});
    f.unit_busy = r.run.unit_busy;
    f.watts = r.watts;
    f.fit = fit::verdict_line(r.fit);
    f.bit_exact = r.bit_exact;
    f.mismatch = r.mismatch;
    f.unchecked = r.unchecked;
    if (r.first_mismatch) {
        f.mismatch_step = r.first_mismatch->step;
        f.mismatch_layer = r.first_mismatch->layer;
    }
    f.layers_checked = r.layers_checked;
    if (r.accuracy)
        f.accuracy = traces::report::AccuracyFacts{r.accuracy->steps, r.accuracy->max_abs_error,
                                                   r.accuracy->top1_agreement, r.accuracy->kl};
    f.host = host_facts(r);
    f.card = card::canonical_text(config);
    if (g) f.verdicts = verdicts(*g, shim::check_model(*g, shim::capabilities(config)));
    return f;
}

std::vector<std::string> program_text(const program::Program& program) {
    std::vector<std::string> out;
    out.reserve(program.commands.size());
    for (std::size_t i = 0; i < program.commands.size(); ++i)
        out.push_back(program::disassemble(program, i));
    return out;
}

} // namespace cardsim::cli
