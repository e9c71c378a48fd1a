#include "traces/report/run_page.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/numerics/contract.hpp"
#include "traces/lexical.hpp"
#include "traces/report/html.hpp"
#include "traces/report/svg_chart.hpp"
#include "traces/report/timeline.hpp"
#include "traces/summary.hpp"
#include "traces/time_split.hpp"
#include "traces/xxh64.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>

namespace cardsim::traces::report {
namespace {

/// Cells a time view has across the run.
constexpr int time_bins = 250;

/// `1 17 42`.
std::string ids(const std::vector<std::uint32_t>& v) {
    std::string s;
    for (auto t : v)
        s += fmt::format("{}{}", s.empty() ? "" : " ", t);
    return s;
}

/// The decode figure `cardsim run` prints: seconds a generated token, when the run had prefill
/// steps, later steps and every step's end.
std::optional<double> decode_seconds(const RunFacts& f) {
    if (f.steps > f.prefill_steps && f.step_end.size() == f.steps && f.prefill_steps > 0 && f.cycles > 0)
        return double(f.step_end.back() - f.step_end[f.prefill_steps - 1]) / double(f.cycles) * f.seconds /
               double(f.steps - f.prefill_steps);
    return std::nullopt;
}

/// The lines of `cardsim run`'s summary, from the run's facts (pipeline.cpp, RunReport::text).
std::vector<std::pair<std::string, std::string>> fact_lines(const RunFacts& f) {
    std::vector<std::pair<std::string, std::string>> o;
    o.emplace_back("model", f.model);
    if (f.program) o.emplace_back("program", *f.program);
    const double secs = f.seconds;
    if (f.seqs == 1) {
        o.emplace_back("prompt", ids(f.prompt));
        if (!f.generated.empty()) o.emplace_back("generated", ids(f.generated));
    }
    std::size_t all = 0;
    for (std::size_t q = 0; q < f.sequences.size(); ++q) {
        auto& [prompt, generated] = f.sequences[q];
        o.emplace_back(fmt::format("sequence {}", q),
                       fmt::format("prompt {}; generated {} ({} tokens)", ids(prompt), ids(generated),
                                   generated.size()));
        all += generated.size();
    }
    if (f.seqs > 1 && all)
        o.emplace_back("generated", fmt::format("{} tokens over {} sequences, {:.1f} tokens/s", all, f.seqs,
                                                secs > 0 ? double(all) / secs : 0.0));
    if (f.fault) o.emplace_back("FAULT", *f.fault);
    const double rows = double(f.steps * f.seqs); // token rows the steps ran
    const std::string of = f.seqs > 1 ? fmt::format(" of {} sequences", f.seqs) : "";
    const std::string tokens = f.seqs > 1 ? fmt::format(" ({} tokens)", f.steps * f.seqs) : "";
    o.emplace_back("card",
                   fmt::format("{} steps{}{} in {} cycles, {:.3f} ms simulated ({:.1f} tokens/s)", f.steps,
                               of, tokens, f.cycles, secs * 1e3, secs > 0 ? rows / secs : 0.0));
    if (auto d = decode_seconds(f))
        o.emplace_back("decode", fmt::format("{:.3f} ms a {}{} ({:.1f} tokens/s)", *d * 1e3,
                                             f.seqs > 1 ? "step" : "token", of, double(f.seqs) / *d));
    const double bw = secs > 0 ? double(f.ddr_bytes) / secs : 0;
    const double peak = f.peak_bytes_per_second;
    const double roofline = peak > 0 ? double(f.ddr_bytes) / peak : 0;
    o.emplace_back("ddr",
                   fmt::format("{:.1f} MB moved, {:.2f} GB/s ({:.1f} % of the {:.1f} GB/s peak); roofline "
                               "{:.3f} ms, achieved {:.1f} % of it",
                               double(f.ddr_bytes) / 1e6, bw / 1e9, peak > 0 ? 100 * bw / peak : 0.0,
                               peak / 1e9, roofline * 1e3, secs > 0 ? 100 * roofline / secs : 0.0));
    for (std::size_t c = 0; c < f.channels.size(); ++c) {
        auto& ch = f.channels[c];
        o.emplace_back(fmt::format("channel {}", c),
                       fmt::format("{:.1f} MB read, {:.1f} MB written, row hits {} misses {} conflicts {}",
                                   double(ch.read) / 1e6, double(ch.written) / 1e6, ch.row_hits,
                                   ch.row_misses, ch.row_conflicts));
    }
    o.emplace_back("power", fmt::format("{:.1f} W on average (estimate), {:.3g} tokens per joule", f.watts,
                                        f.watts > 0 && secs > 0 ? rows / secs / f.watts : 0.0));
    if (f.fit.rfind("fit: ", 0) == 0) o.emplace_back("fit", f.fit.substr(5));
    std::string busy;
    for (auto& [name, cycles] : f.unit_busy)
        if (cycles)
            busy += fmt::format("{}{} {:.1f} %", busy.empty() ? "" : " ", name,
                                f.cycles ? 100.0 * double(cycles) / double(f.cycles) : 0.0);
    o.emplace_back("units busy", busy);
    if (!f.layers_checked.empty()) {
        std::string l;
        for (auto v : f.layers_checked)
            l += fmt::format("{}{}", l.empty() ? "" : " ", v);
        o.emplace_back("layers read back each step", l);
    }
    if (f.bit_exact)
        o.emplace_back("bit-exact",
                       *f.bit_exact
                           ? fmt::format("yes (every output{} equals the golden executor's)",
                                         f.layers_checked.empty() ? "" : " and every checked layer's output")
                           : fmt::format("NO: {}", f.mismatch));
    else
        o.emplace_back("bit-exact", fmt::format("not checked ({})", f.unchecked));
    if (f.accuracy)
        o.emplace_back(fmt::format("accuracy vs f64 reference over {} steps", f.accuracy->steps),
                       fmt::format("max |logit error| {:.3g}, top-1 agreement {:.1f} %, KL {:.3g} nats",
                                   f.accuracy->max_abs_error, 100 * f.accuracy->top1_agreement,
                                   f.accuracy->kl));
    if (f.host) o.emplace_back("host", host_phases(*f.host, f.steps, secs));
    return o;
}

/// Whether every command of the trace carries ddr fields (so they give the DDR traffic).
bool all_ddr(const Trace& t) {
    return !t.records.empty() && t.header.ddr_channels &&
           std::all_of(t.records.begin(), t.records.end(), [](auto& r) { return !r.ddr.empty(); });
}

/// What the trace alone says of the run.
std::vector<std::pair<std::string, std::string>> trace_lines(const Trace& t) {
    auto s = summarise(t);
    const double secs = double(s.cycles) / (t.header.clock_mhz * 1e6);
    std::vector<std::pair<std::string, std::string>> o;
    o.emplace_back("card", fmt::format("{} commands in {} cycles, {:.3f} ms at {} MHz", s.commands, s.cycles,
                                       secs * 1e3, format_clock(t.header.clock_mhz).value_or("?")));
    if (all_ddr(t)) {
        std::uint64_t bytes = 0;
        for (auto& c : s.ddr)
            bytes += c.read + c.written;
        o.emplace_back("ddr", fmt::format("{:.1f} MB moved, {:.2f} GB/s", double(bytes) / 1e6,
                                          secs > 0 ? double(bytes) / secs / 1e9 : 0.0));
        for (std::size_t c = 0; c < s.ddr.size(); ++c)
            o.emplace_back(fmt::format("channel {}", c),
                           fmt::format("{:.1f} MB read, {:.1f} MB written", double(s.ddr[c].read) / 1e6,
                                       double(s.ddr[c].written) / 1e6));
    } else {
        o.emplace_back("operands",
                       fmt::format("{:.1f} MB read, {:.1f} MB written (the trace has no ddr fields)",
                                   double(s.read) / 1e6, double(s.written) / 1e6));
    }
    return o;
}

/// The figure cards at the top of the page.
std::string figure_cards(const RunPageInput& in) {
    std::string o = "<section id=\"figures\" class=\"cards\">\n";
    if (!in.facts) {
        auto s = summarise(in.trace);
        const double secs = double(s.cycles) / (in.trace.header.clock_mhz * 1e6);
        o += figure_card("simulated time", fmt::format("{:.3f} ms", secs * 1e3),
                         fmt::format("{} cycles", s.cycles));
        o += figure_card("tokens/s", "not recorded", "the trace carries no run facts (run.summary)", "muted");
        if (all_ddr(in.trace)) {
            std::uint64_t bytes = 0;
            for (auto& c : s.ddr)
                bytes += c.read + c.written;
            o += figure_card("DDR bandwidth",
                             fmt::format("{:.2f} GB/s", secs > 0 ? double(bytes) / secs / 1e9 : 0.0),
                             fmt::format("{:.1f} MB moved", double(bytes) / 1e6));
        }
        o += figure_card("bit-exact", "not recorded", "", "muted");
        return o + "</section>\n";
    }
    const auto& f = *in.facts;
    const double secs = f.seconds, peak = f.peak_bytes_per_second;
    if (auto d = decode_seconds(f))
        o += figure_card("decode tokens/s", fmt::format("{:.1f}", double(f.seqs) / *d),
                         f.seqs > 1 ? fmt::format("{:.3f} ms a step of {} sequences", *d * 1e3, f.seqs)
                                    : fmt::format("{:.3f} ms a token", *d * 1e3));
    else
        o += figure_card("tokens/s", fmt::format("{:.1f}", secs > 0 ? double(f.steps * f.seqs) / secs : 0.0),
                         fmt::format("{} steps in {:.3f} ms", f.steps, secs * 1e3));
    const double roofline = peak > 0 ? double(f.ddr_bytes) / peak : 0;
    o += figure_card("roofline fraction", fmt::format("{:.1f} %", secs > 0 ? 100 * roofline / secs : 0.0),
                     fmt::format("roofline {:.3f} ms of {:.3f} ms", roofline * 1e3, secs * 1e3));
    const double bw = secs > 0 ? double(f.ddr_bytes) / secs : 0;
    std::string per;
    for (std::size_t c = 0; c < f.channels.size(); ++c)
        per += fmt::format("{}{:.2f}", per.empty() ? "per channel " : " / ",
                           secs > 0 ? double(f.channels[c].read + f.channels[c].written) / secs / 1e9 : 0.0);
    o += figure_card("DDR bandwidth", fmt::format("{:.2f} GB/s", bw / 1e9),
                     fmt::format("{:.1f} % of the {:.1f} GB/s peak; {} GB/s",
                                 peak > 0 ? 100 * bw / peak : 0.0, peak / 1e9, per));
    if (f.bit_exact)
        o += figure_card("bit-exact", *f.bit_exact ? "yes" : "NO",
                         *f.bit_exact ? "outputs equal the golden executor's" : f.mismatch,
                         *f.bit_exact ? "good" : "bad");
    else
        o += figure_card("bit-exact", "not checked", f.unchecked, "muted");
    if (f.accuracy)
        o += figure_card("accuracy vs f64", fmt::format("{:.1f} % top-1", 100 * f.accuracy->top1_agreement),
                         fmt::format("max |logit error| {:.3g}, KL {:.3g} nats over {} steps",
                                     f.accuracy->max_abs_error, f.accuracy->kl, f.accuracy->steps));
    else
        o += figure_card(
            "accuracy vs f64", "not measured",
            f.bit_exact ? "the run skipped the reference" : "needs a full run with the checkpoint", "muted");
    o += figure_card("power (estimate)", fmt::format("{:.1f} W", f.watts),
                     fmt::format("{:.3g} tokens per joule; {}",
                                 f.watts > 0 && secs > 0 ? double(f.steps * f.seqs) / secs / f.watts : 0.0,
                                 f.fit.rfind("fit: yes", 0) == 0 ? "the config fits the device" : f.fit),
                     f.fit.rfind("fit: no", 0) == 0 ? "bad" : "");
    if (f.fault) o += figure_card("fault", "bus error", *f.fault, "bad");
    return o + "</section>\n";
}

/// A two-column table of (label, text) rows.
std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows, std::string_view id = "") {
    std::string o = fmt::format("<table class=\"kv\"{}>\n", id.empty() ? "" : fmt::format(" id=\"{}\"", id));
    for (auto& [k, v] : rows)
        o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape(k), escape(v));
    return o + "</table>\n";
}

/// The DDR channel table: per channel bytes, bandwidth and row outcomes.
std::string channel_table(const RunPageInput& in) {
    std::string o =
        "<table class=\"data sortable\">\n<thead><tr><th>channel</th><th>MB read</th><th>MB written</th>"
        "<th>GB/s</th>";
    if (in.facts) o += "<th>row hits</th><th>row misses</th><th>row conflicts</th><th>hit rate</th>";
    o += "</tr></thead>\n<tbody>\n";
    if (in.facts) {
        auto& f = *in.facts;
        for (std::size_t c = 0; c < f.channels.size(); ++c) {
            auto& ch = f.channels[c];
            const auto rows = ch.row_hits + ch.row_misses + ch.row_conflicts;
            o += fmt::format(
                "<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.2f}</td><td>{}</td><td>{}</td>"
                "<td>{}</td><td>{:.1f} %</td></tr>\n",
                c, double(ch.read) / 1e6, double(ch.written) / 1e6,
                f.seconds > 0 ? double(ch.read + ch.written) / f.seconds / 1e9 : 0.0, ch.row_hits,
                ch.row_misses, ch.row_conflicts, rows ? 100.0 * double(ch.row_hits) / double(rows) : 0.0);
        }
    } else {
        auto s = summarise(in.trace);
        const double secs = double(s.cycles) / (in.trace.header.clock_mhz * 1e6);
        for (std::size_t c = 0; c < s.ddr.size(); ++c)
            o += fmt::format("<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.2f}</td></tr>\n", c,
                             double(s.ddr[c].read) / 1e6, double(s.ddr[c].written) / 1e6,
                             secs > 0 ? double(s.ddr[c].read + s.ddr[c].written) / secs / 1e9 : 0.0);
    }
    return o + "</tbody>\n</table>\n";
}

/// The per-unit table of the trace: commands, busy time, bytes.
std::string unit_table(const Trace& t) {
    auto s = summarise(t);
    std::string o =
        "<table class=\"data sortable\">\n<thead><tr><th>unit</th><th>commands</th><th>busy cycles</th>"
        "<th>busy %</th><th>MB read</th><th>MB written</th></tr></thead>\n<tbody>\n";
    for (auto& u : s.units)
        o += fmt::format(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.3f}</td><td>{:.3f}</td></tr>\n",
            escape(u.unit), u.commands, u.busy_cycles,
            s.cycles ? 100.0 * double(u.busy_cycles) / double(s.cycles) : 0.0, double(u.read) / 1e6,
            double(u.written) / 1e6);
    return o + "</tbody>\n</table>\n";
}

/// A system trace as the page's timeline, occupancy and unit table draw it: one card's trace whose
/// units are named by their card (`card1.matvec`), and a row per link (`link0to1`) with a
/// `message` slice per message (its bytes as read, no DDR bytes).
Trace system_view(const Trace& t) {
    Trace v;
    v.header = t.header;
    v.header.cards.clear();
    v.header.links.clear();
    std::uint64_t index = 0;
    for (auto& r : t.records) {
        v.records.push_back(r);
        v.records.back().unit = unit_label(r);
        v.records.back().card.reset();
        index = std::max(index, r.index + 1);
    }
    for (auto& m : t.messages) {
        Record r{.index = index++,
                 .unit = fmt::format("link{}to{}", m.from, m.to),
                 .opcode = "message",
                 .start = m.start,
                 .end = m.end,
                 .read = m.bytes};
        if (t.header.ddr_channels) r.ddr.assign(*t.header.ddr_channels, ChannelBytes{});
        v.records.push_back(std::move(r));
    }
    return v;
}

/// A system's section: per card its program, commands, DDR bytes and busiest unit; per link its
/// messages, bytes, busy time and utilisation (busy over the run). Nothing for one card.
std::string system_section(const Trace& t) {
    if (t.header.cards.empty()) return "";
    auto whole = summarise(t);
    const double mhz = t.header.clock_mhz;
    const double run = static_cast<double>(whole.cycles);
    std::string o = fmt::format(
        "<section id=\"system\">\n<h2>System: {} cards, {} links</h2>\n<h3>Cards</h3>\n"
        "<table class=\"data sortable\" id=\"system-cards\">\n<thead><tr><th>card</th><th>program</th>"
        "<th>commands</th><th>last end (cycles)</th><th>MB of DDR moved</th><th>busiest unit</th>"
        "<th>busy %</th></tr></thead>\n<tbody>\n",
        t.header.cards.size(), t.header.links.size());
    for (std::uint32_t k = 0; k < t.header.cards.size(); ++k) {
        auto s = summarise(card_trace(t, k));
        std::uint64_t ddr = 0;
        for (auto& c : s.ddr)
            ddr += c.read + c.written;
        const UnitBusy* busiest = nullptr;
        for (auto& u : s.units)
            if (!busiest || u.busy_cycles > busiest->busy_cycles) busiest = &u;
        o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td>"
                         "<td>{:.1f}</td></tr>\n",
                         k, hex16(t.header.cards[k]), s.commands, s.cycles, double(ddr) / 1e6,
                         busiest ? escape(busiest->unit) : "",
                         busiest && run > 0 ? 100.0 * double(busiest->busy_cycles) / run : 0.0);
    }
    o +=
        "</tbody>\n</table>\n<h3>Links</h3>\n<table class=\"data sortable\" id=\"system-links\">\n<thead><tr>"
        "<th>link</th><th>ports</th><th>messages</th><th>MB</th><th>busy cycles</th><th>busy us</th>"
        "<th>utilisation %</th></tr></thead>\n<tbody>\n";
    for (auto& l : whole.links)
        o += fmt::format(
            "<tr><td>{} -&gt; {}</td><td>{}</td><td>{}</td><td>{:.6f}</td><td>{}</td><td>{:.3f}</td>"
            "<td>{:.2f}</td></tr>\n",
            l.from, l.to, l.ports, l.messages, double(l.bytes) / 1e6, l.busy_cycles,
            double(l.busy_cycles) / mhz, run > 0 ? 100.0 * double(l.busy_cycles) / run : 0.0);
    return o +
           "</tbody>\n</table>\n<p class=\"help\">A link's utilisation is the time its wire was sending over "
           "the run's cycles; the timeline and occupancy below have a row per card's unit and per "
           "link.</p>\n</section>\n";
}

/// The shim's verdict table.
/// The experts a run's Moe layers touched (the trace's `run.experts` meta, the summary's lines):
/// its first line, then a row a layer; nothing for a run without experts.
std::string experts_section(const Trace& t) {
    auto it = t.header.meta.find("run.experts");
    if (it == t.header.meta.end()) return {};
    std::vector<std::pair<std::string, std::string>> rows;
    std::string first;
    std::string_view text = it->second;
    while (!text.empty()) {
        const auto nl = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(std::min(nl + 1, text.size()));
        while (!line.empty() && line.front() == ' ')
            line.remove_prefix(1);
        if (line.empty()) continue;
        if (first.empty()) {
            first = std::string(line);
            continue;
        }
        const auto colon = line.find(": ");
        if (colon == std::string_view::npos)
            rows.emplace_back("", std::string(line));
        else
            rows.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
    }
    return fmt::format(
        "<section id=\"experts\">\n<h2>Experts</h2>\n<p>{}</p>\n<p class=\"help\">Per Moe layer, "
        "means over the steps: the distinct experts a step touched, the rows of the most chosen "
        "expert against the mean of the touched ones, and the expert bytes streamed (each touched "
        "expert once a step).</p>\n{}</section>\n",
        escape(first), kv_table(rows, "experts-lines"));
}

std::string shim_section(const RunPageInput& in) {
    std::string o = "<section id=\"shim\">\n<h2>The shim's verdicts</h2>\n";
    if (!in.facts || !in.facts->verdicts)
        return o +
               "<p class=\"muted\">Not recorded: the run had no checkpoint to check (a program run without "
               "--model), or the trace comes from elsewhere.</p>\n</section>\n";
    auto& v = *in.facts->verdicts;
    o += fmt::format("<p class=\"verdict\">{}</p>\n", escape(v.verdict));
    o += "<table class=\"data sortable\" "
         "id=\"shim-table\">\n<thead><tr><th>part</th><th>layers</th><th>answer</th>"
         "<th>class</th><th>ops</th><th>commands</th><th>groups</th></tr></thead>\n<tbody>\n";
    for (auto& r : v.rows)
        o += fmt::format(
            "<tr class=\"answer-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>\n",
            escape(r.answer), escape(r.part), escape(r.layers), escape(r.answer), escape(r.cls),
            escape(r.ops), escape(r.commands), r.count);
    o += "</tbody>\n</table>\n";
    if (!v.declined.empty()) {
        o += "<h3>Merges not made</h3>\n<ul>\n";
        for (auto& d : v.declined)
            o += fmt::format("<li>{}</li>\n", escape(d));
        o += "</ul>\n";
    }
    if (!v.refusals.empty()) {
        o += "<h3>Refusals</h3>\n<ul class=\"refusals\">\n";
        for (auto& r : v.refusals)
            o += fmt::format("<li>{}</li>\n", escape(r));
        o += "</ul>\n";
    }
    return o + "</section>\n";
}

/// The layer checks: the layers read back each step and what the check found.
std::string layer_section(const RunFacts& f) {
    std::string o =
        "<section id=\"layers\">\n<h2>Layer checks</h2>\n<table class=\"data\">\n<thead><tr><th>layer"
        "</th><th>result</th></tr></thead>\n<tbody>\n";
    for (auto l : f.layers_checked) {
        std::string result;
        if (!f.bit_exact)
            result = fmt::format("not checked ({})", f.unchecked);
        else if (*f.bit_exact)
            result = "bit-exact at every step";
        else if (f.mismatch_layer && *f.mismatch_layer == l)
            result =
                fmt::format("first difference{}: {}",
                            f.mismatch_step ? fmt::format(" at step {}", *f.mismatch_step) : "", f.mismatch);
        else
            result = "the check stops at the run's first difference";
        o += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", l, escape(result));
    }
    return o + "</tbody>\n</table>\n</section>\n";
}

/// The card config (canonical text, grouped by section) and the numerics contract of the knob.
std::string card_section(const RunPageInput& in) {
    const auto& h = in.trace.header;
    std::string o = "<section id=\"card\">\n<h2>Card config and numerics contract</h2>\n";
    std::vector<std::pair<std::string, std::string>> head{
        {"card", h.meta.count("card") ? h.meta.at("card") : std::string("not recorded")},
        {"config digest", hex16(h.config)},
        {"program digest", hex16(h.program)},
        {"clock", fmt::format("{} MHz", format_clock(h.clock_mhz).value_or("?"))},
        {"ddr channels", h.ddr_channels ? std::to_string(*h.ddr_channels) : std::string("not recorded")},
        {"mode", std::string(name(h.mode))},
        {"knob point", numerics::to_string(h.knob)}};
    if (in.facts && !in.facts->card.empty()) {
        auto& text = in.facts->card;
        const auto d = xxh64(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
        head.emplace_back("config text", d == h.config
                                             ? "recorded; its digest is the trace's config digest"
                                             : fmt::format("recorded, but its digest {} is not the trace's "
                                                           "config digest",
                                                           hex16(d)));
    }
    if (in.facts) head.emplace_back("arena", fmt::format("{} bytes of on-chip SRAM", in.facts->arena_bytes));
    o += kv_table(head);
    const auto contract = numerics::to_string(numerics::contract(h.knob));
    o += "<h3>Numerics contract</h3>\n<pre class=\"contract\">" + escape(contract) + "</pre>\n";
    if (in.facts && !in.facts->card.empty()) {
        // `a.b.c = v` lines, one table per first component.
        std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> groups;
        std::string_view text = in.facts->card;
        while (!text.empty()) {
            auto nl = text.find('\n');
            auto line = text.substr(0, nl);
            text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
            auto eq = line.find(" = ");
            if (eq == std::string_view::npos) continue;
            auto key = line.substr(0, eq), value = line.substr(eq + 3);
            auto dot = key.find('.');
            std::string section(key.substr(0, dot)),
                rest(dot == std::string_view::npos ? key : key.substr(dot + 1));
            if (groups.empty() || groups.back().first != section) groups.push_back({section, {}});
            groups.back().second.emplace_back(rest, std::string(value));
        }
        for (auto& [section, rows] : groups)
            o += fmt::format("<details><summary>{} ({} keys)</summary>\n{}</details>\n", escape(section),
                             rows.size(), kv_table(rows));
    }
    return o + "</section>\n";
}

} // namespace

std::vector<std::pair<std::string, std::string>> summary_lines(const RunPageInput& input) {
    auto lines = input.facts ? fact_lines(*input.facts) : trace_lines(input.trace);
    TimeByUnit time; // where each unit kind's commands' time went, as `cardsim run` prints it
    for (auto& r : input.trace.records)
        if (r.split) time.add(r.unit, *r.split);
    for (auto& line : time_lines(time.units()))
        lines.push_back(std::move(line));
    return lines;
}

std::string run_page(const RunPageInput& in) {
    // A system's timeline, occupancy and units: each card's units and each link a row (system_view).
    std::optional<Trace> view;
    if (!in.trace.header.cards.empty()) view = system_view(in.trace);
    const auto& t = view ? *view : in.trace;
    const std::string model = in.facts && !in.facts->model.empty() ? in.facts->model : "a run";
    std::string b;
    b += fmt::format("<header><h1>{}</h1><p class=\"sub\">cardsim run report · {} · program {} · {} · {}</p>"
                     "</header>\n",
                     escape(model), escape(in.source.empty() ? "trace" : in.source), hex16(t.header.program),
                     escape(numerics::to_string(t.header.knob)), escape(name(t.header.mode)));
    b += "<nav><a href=\"#figures\">figures</a> <a href=\"#summary\">summary</a> <a "
         "href=\"#timeline\">timeline</a> "
         "<a href=\"#occupancy\">occupancy</a> <a href=\"#bandwidth\">bandwidth</a> <a "
         "href=\"#units\">units</a> "
         "<a href=\"#shim\">shim</a>";
    if (in.facts && !in.facts->layers_checked.empty()) b += " <a href=\"#layers\">layer checks</a>";
    if (t.header.meta.count("run.experts")) b += " <a href=\"#experts\">experts</a>";
    if (view) b += " <a href=\"#system\">system</a>";
    b += " <a href=\"#card\">card</a></nav>\n<main>\n";
    b += figure_cards(in);
    b += "<section id=\"summary\">\n<h2>Summary</h2>\n";
    if (!in.facts)
        b += "<p class=\"muted\">The trace carries no run facts (no <code>run.summary</code> meta line): the "
             "figures "
             "below are what its records give.</p>\n";
    b += kv_table(summary_lines(in), "summary-lines");
    b += "<h3>DDR channels</h3>\n" + channel_table(in) + "</section>\n";
    b += system_section(in.trace);
    // The timeline: drawn by the page's script from the command columns.
    const auto steps =
        in.facts ? std::span<const std::uint64_t>(in.facts->step_end) : std::span<const std::uint64_t>();
    b += fmt::format(
        "<section id=\"timeline\">\n<h2>Command timeline</h2>\n<p class=\"help\">{} commands. Wheel or the "
        "buttons "
        "zoom, drag pans, double-click resets. Where commands are narrower than a pixel they are drawn as "
        "shaded "
        "bands (darker = busier); hover for details.</p>\n<div class=\"tl-controls\"><button type=\"button\" "
        "data-zoom=\"in\">zoom in</button> <button type=\"button\" data-zoom=\"out\">zoom out</button> "
        "<button "
        "type=\"button\" data-zoom=\"reset\">whole run</button> <span class=\"tl-range\"></span></div>\n"
        "<div id=\"timeline-view\" class=\"timeline\"></div>\n<script type=\"application/json\" "
        "id=\"timeline-data\">{}</script>\n</section>\n",
        t.records.size(), script_json(timeline_data(t, in.operands, steps)));
    b += "<section id=\"occupancy\">\n<h2>Unit occupancy over time</h2>\n" + occupancy_svg(t, time_bins) +
         "</section>\n";
    b += "<section id=\"bandwidth\">\n<h2>DDR bandwidth over time</h2>\n";
    auto bw = bandwidth_chart(t, time_bins);
    for (auto& s : bw.series)
        s.dots = false;
    b += svg(bw) + "</section>\n";
    b += "<section id=\"units\">\n<h2>Units</h2>\n" + unit_table(t) + "</section>\n";
    b += shim_section(in);
    b += experts_section(t);
    if (in.facts && !in.facts->layers_checked.empty()) b += layer_section(*in.facts);
    b += card_section(in);
    b += "</main>\n<div id=\"tooltip\" class=\"tooltip\" hidden></div>\n";
    return document(fmt::format("{} — cardsim run report", model), b);
}

void write_run_page(const std::filesystem::path& destination, const RunPageInput& input) {
    io::write_file_atomically(destination, run_page(input));
}

} // namespace cardsim::traces::report
