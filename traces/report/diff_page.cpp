#include "traces/report/diff_page.hpp"

#include "engine/io/atomic_file.hpp"
#include "traces/report/html.hpp"
#include "traces/report/svg_chart.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::traces::report {
namespace {

/// `b - a` as a signed number (`+12`, `-3`, `+0`).
std::string signed_delta(std::uint64_t a, std::uint64_t b) {
    return b >= a ? fmt::format("+{}", b - a) : fmt::format("-{}", a - b);
}

/// A table cell holding a number, sortable by it.
std::string num_cell(std::uint64_t v) {
    return fmt::format("<td data-sort=\"{0}\">{0}</td>", v);
}

/// The cells `A`, `B`, `B - A` and the per cent change, the change marked when `over`.
std::string change_cells(std::uint64_t a, std::uint64_t b, bool over = false) {
    return num_cell(a) + num_cell(b) +
           fmt::format("<td data-sort=\"{}\"{}>{}</td><td>{}</td>", double(b) - double(a),
                       over ? " class=\"over\"" : "", signed_delta(a, b), escape(change(a, b)));
}

/// The summary cards: the verdict, the total cycles, the commands, the data and the config.
std::string cards(const DiffReport& r) {
    std::string o = "<section id=\"figures\" class=\"cards\">\n";
    o += figure_card("verdict", r.agree() ? "agree" : "differ", r.verdict(), r.agree() ? "good" : "bad");
    o += figure_card(
        "total cycles", fmt::format("{} → {}", r.total.a, r.total.b),
        fmt::format("{} ({} cycles)", change(r.total.a, r.total.b), signed_delta(r.total.a, r.total.b)),
        r.total.over ? "bad" : "");
    o += figure_card("commands", fmt::format("{} / {}", r.commands_a, r.commands_b),
                     fmt::format("{} paired; {} over the tolerance", r.paired, r.durations.size()),
                     r.only_in_a.empty() && r.only_in_b.empty() ? "" : "bad");
    const std::string data = !r.data_compared ? "not compared"
                             : r.first_data   ? fmt::format("diverge at {}", r.first_data->index)
                                              : "bit-exact";
    o += figure_card("data", data,
                     r.first_data ? fmt::format("{} commands diverge", r.data_divergent)
                                  : (r.data_uncomparable ? *r.data_uncomparable : ""),
                     !r.data_compared ? "muted" : (r.first_data ? "bad" : "good"));
    o += figure_card("config keys", std::to_string(r.config.size()),
                     r.config.empty() ? "no recorded key differs" : "differ (by name below)",
                     r.config.empty() ? "muted" : "");
    return o + "</section>\n";
}

/// Both sides' value of one figure per category (units, phases) as a chart.
Chart side_by_side(std::string title, std::string y_label, std::string_view name_a, std::string_view name_b,
                   const std::vector<std::string>& categories, const std::vector<std::uint64_t>& a,
                   const std::vector<std::uint64_t>& b, bool line) {
    Chart c;
    c.title = std::move(title);
    c.x_label = "";
    c.y_label = std::move(y_label);
    c.categories = categories;
    Series sa{fmt::format("A: {}", name_a)}, sb{fmt::format("B: {}", name_b)};
    sa.line = sb.line = line;
    sb.emphasis = true;
    for (std::size_t i = 0; i < categories.size(); ++i) {
        sa.points.push_back({double(i), double(a[i]), "", fmt::format("{}\nA {}", categories[i], a[i])});
        sb.points.push_back({double(i), double(b[i]), "",
                             fmt::format("{}\nB {} ({})", categories[i], b[i], change(a[i], b[i]))});
    }
    c.series = {std::move(sa), std::move(sb)};
    return c;
}

/// Per unit kind: commands, busy cycles, bytes and summed waits on both sides, with a chart.
std::string units_section(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string o = "<section id=\"units\">\n<h2>Units</h2>\n<p class=\"help\">Busy cycles (overlapping "
                    "commands counted once), bytes and the named waits each unit's commands carry, largest "
                    "change first.</p>\n";
    if (r.units.empty()) return o + "<p class=\"muted\">No unit ran a command.</p>\n</section>\n";
    std::vector<std::string> names;
    std::vector<std::uint64_t> busy_a, busy_b;
    for (auto& u : r.units) {
        names.push_back(u.unit);
        busy_a.push_back(u.busy_a);
        busy_b.push_back(u.busy_b);
    }
    o += svg(
        side_by_side("busy cycles per unit", "busy cycles", name_a, name_b, names, busy_a, busy_b, false));
    o += "<table class=\"data sortable\" id=\"unit-table\"><thead><tr><th>unit</th><th>commands "
         "A</th><th>commands "
         "B</th><th>busy A</th><th>busy B</th><th>Δ</th><th>%</th><th>read A</th><th>read B</th><th>written "
         "A</th><th>written B</th><th>waits</th></tr></thead>\n<tbody>\n";
    for (auto& u : r.units) {
        std::string waits;
        for (auto& w : u.waits)
            waits += fmt::format("{}{} {} → {}", waits.empty() ? "" : "; ", w.name,
                                 w.a ? std::to_string(*w.a) : "—", w.b ? std::to_string(*w.b) : "—");
        o += fmt::format("<tr><td>{}</td>{}{}{}{}{}{}{}<td>{}</td></tr>\n", escape(u.unit),
                         num_cell(u.commands_a), num_cell(u.commands_b), change_cells(u.busy_a, u.busy_b),
                         num_cell(u.read_a), num_cell(u.read_b), num_cell(u.written_a), num_cell(u.written_b),
                         escape(waits));
    }
    return o + "</tbody></table>\n</section>\n";
}

/// Per phase (prefill, each decode step): cycles and commands on both sides, with a chart.
std::string phases_section(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string o =
        "<section id=\"phases\">\n<h2>Phases</h2>\n<p class=\"help\">A phase runs from the previous "
        "phase's last end to its own, so the phases add up to the total.</p>\n";
    if (r.phases.empty())
        return o + "<p class=\"muted\">No phase: the traces have no commands.</p>\n</section>\n";
    std::vector<std::string> names;
    std::vector<std::uint64_t> a, b;
    for (auto& p : r.phases) {
        names.push_back(p.name);
        a.push_back(p.cycles_a);
        b.push_back(p.cycles_b);
    }
    if (r.phases.size() > 1)
        o += svg(side_by_side("cycles per phase", "cycles", name_a, name_b, names, a, b, true));
    o +=
        "<table class=\"data sortable\" id=\"phase-table\"><thead><tr><th>phase</th><th>steps</th><th>cycles "
        "A</th><th>cycles B</th><th>Δ</th><th>%</th><th>commands A</th><th>commands B</th></tr></thead>\n"
        "<tbody>\n";
    for (auto& p : r.phases)
        o +=
            fmt::format("<tr><td>{}</td><td>{}</td>{}{}{}</tr>\n", escape(p.name),
                        p.first_step == p.last_step ? std::to_string(p.first_step)
                                                    : fmt::format("{}–{}", p.first_step, p.last_step),
                        change_cells(p.cycles_a, p.cycles_b), num_cell(p.commands_a), num_cell(p.commands_b));
    return o + "</tbody></table>\n</section>\n";
}

/// The data verdict, as the text report words it.
std::string data_section(const DiffReport& r) {
    return fmt::format(
        "<section id=\"data\">\n<h2>Data</h2>\n<pre class=\"{}\" id=\"data-verdict\">{}</pre>\n"
        "</section>\n",
        r.first_data ? "bad" : "good", escape(data_text(r)));
}

/// The header fields and the config keys that differ.
std::string header_section(const DiffReport& r) {
    std::string o = "<section id=\"header\">\n<h2>Header and config</h2>\n";
    if (r.header.empty() && r.config.empty())
        o += "<p class=\"muted\">The headers agree, and no recorded config key differs.</p>\n";
    if (!r.header.empty()) {
        o += "<table class=\"data\" "
             "id=\"header-table\"><thead><tr><th>field</th><th>A</th><th>B</th></tr></thead>"
             "<tbody>\n";
        for (auto& h : r.header)
            o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(h.field), escape(h.a),
                             escape(h.b));
        o += "</tbody></table>\n";
    }
    if (!r.config.empty()) {
        o += "<table class=\"data sortable\" id=\"config-table\"><thead><tr><th>config "
             "key</th><th>A</th><th>B</th>"
             "</tr></thead><tbody>\n";
        for (auto& k : r.config)
            o += fmt::format("<tr><td>{}</td><td>{}{}</td><td>{}{}</td></tr>\n", escape(k.key), escape(k.a),
                             k.a_default ? " (default)" : "", escape(k.b), k.b_default ? " (default)" : "");
        o += "</tbody></table>\n";
    }
    if (!r.notes.empty()) {
        o += "<h3>Notes (differences that do not count)</h3>\n<ul class=\"notes\">\n";
        for (auto& n : r.notes)
            o += fmt::format("<li>{}</li>\n", escape(n));
        o += "</ul>\n";
    }
    return o + "</section>\n";
}

/// The commands whose own duration (or a named wait) moved by more than the tolerance, the
/// largest move first, as many as the options list.
std::string commands_section(const DiffReport& r) {
    std::string o = fmt::format(
        "<section id=\"commands\">\n<h2>Commands whose own cycles moved</h2>\n<p class=\"help\">Each command "
        "is "
        "judged by its duration and its named waits (within {} %), not by a start that moved because "
        "earlier commands moved. {} of {} paired commands changed at all; {} are over the tolerance{}.</p>\n",
        r.options.cycles_tol_pct, r.durations_changed, r.paired, r.durations.size(),
        r.listed(r.durations.size()) < r.durations.size()
            ? fmt::format(", the largest {} listed (--top N, --all)", r.listed(r.durations.size()))
            : "");
    if (r.durations.empty()) return o + "</section>\n";
    o += "<table class=\"data sortable\" "
         "id=\"command-table\"><thead><tr><th>command</th><th>pc</th><th>unit</th>"
         "<th>opcode</th><th>phase</th><th>layer</th><th>duration A</th><th>duration "
         "B</th><th>Δ</th><th>%</th>"
         "<th>waits</th></tr></thead>\n<tbody>\n";
    for (std::size_t i = 0; i < r.listed(r.durations.size()); ++i) {
        auto& d = r.durations[i];
        std::string waits;
        for (auto& w : d.waits)
            if (w.a && w.b && *w.a != *w.b)
                waits += fmt::format("{}{} {} → {}", waits.empty() ? "" : "; ", w.name, *w.a, *w.b);
        o += fmt::format(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td></tr>\n",
            d.index, d.pc ? std::to_string(*d.pc) : "", escape(d.unit), escape(d.opcode), escape(d.phase),
            escape(d.site.layer), change_cells(d.a, d.b, d.over), escape(waits));
    }
    return o + "</tbody></table>\n</section>\n";
}

/// Positions (with a start tolerance), shape mismatches and commands on one side only.
std::string structure_section(const DiffReport& r) {
    if (r.positions.empty() && r.shapes.empty() && r.only_in_a.empty() && r.only_in_b.empty()) return "";
    std::string o = "<section id=\"structure\">\n<h2>Positions, shapes and missing commands</h2>\n";
    if (!r.positions.empty()) {
        o += "<table class=\"data\"><thead><tr><th>command</th><th>unit</th><th>opcode</th><th>start A → "
             "B</th>"
             "<th>end A → B</th></tr></thead><tbody>\n";
        for (std::size_t i = 0; i < r.listed(r.positions.size()); ++i) {
            auto& p = r.positions[i];
            o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td><td>{} → {}</td></tr>\n",
                             p.index, escape(p.unit), escape(p.opcode), p.start_a, p.start_b, p.end_a,
                             p.end_b);
        }
        o += "</tbody></table>\n";
    }
    if (!r.shapes.empty()) {
        o +=
            "<table class=\"data\"><thead><tr><th>command</th><th>field</th><th>A</th><th>B</th></tr></thead>"
            "<tbody>\n";
        for (std::size_t i = 0; i < r.listed(r.shapes.size()); ++i) {
            auto& s = r.shapes[i];
            o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", s.index,
                             escape(s.field), escape(s.a), escape(s.b));
        }
        o += "</tbody></table>\n";
    }
    if (!r.only_in_a.empty()) o += fmt::format("<p>{} commands only in A.</p>\n", r.only_in_a.size());
    if (!r.only_in_b.empty()) o += fmt::format("<p>{} commands only in B.</p>\n", r.only_in_b.size());
    return o + "</section>\n";
}

} // namespace

std::string diff_page(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string b;
    b += fmt::format(
        "<header><h1>Trace diff</h1><p class=\"sub\">cardsim trace diff report · A (reference) {} · "
        "B {} · durations within {} %{}</p></header>\n",
        escape(name_a), escape(name_b), r.options.cycles_tol_pct,
        r.options.start_tol_pct ? fmt::format(", starts within {} %", *r.options.start_tol_pct) : "");
    b += "<nav><a href=\"#figures\">figures</a> <a href=\"#units\">units</a> <a href=\"#phases\">phases</a> "
         "<a "
         "href=\"#data\">data</a> <a href=\"#header\">header and config</a> <a "
         "href=\"#commands\">commands</a> <a "
         "href=\"#text\">text report</a></nav>\n<main>\n";
    b += cards(r);
    b += units_section(r, name_a, name_b);
    b += phases_section(r, name_a, name_b);
    b += data_section(r);
    b += header_section(r);
    b += commands_section(r);
    b += structure_section(r);
    b +=
        fmt::format("<section id=\"text\">\n<h2>Text report</h2>\n<p class=\"help\">What <code>cardsim trace "
                    "diff</code> prints for the same options.</p>\n<pre>{}</pre>\n</section>\n",
                    escape(to_text(r, name_a, name_b)));
    b += "</main>\n<div id=\"tooltip\" class=\"tooltip\" hidden></div>\n";
    return document(fmt::format("Trace diff {} → {} — cardsim report", name_a, name_b), b);
}

void write_diff_page(const std::filesystem::path& destination, const DiffReport& report,
                     std::string_view name_a, std::string_view name_b) {
    io::write_file_atomically(destination, diff_page(report, name_a, name_b));
}

namespace {

/// `html` with every `id="X"` made `id="PREFIX-X"` (a card's sections, unique on a system's page).
std::string prefix_ids(std::string html, std::string_view prefix) {
    const std::string from = " id=\"", to = fmt::format(" id=\"{}-", prefix);
    for (auto at = html.find(from); at != std::string::npos; at = html.find(from, at + to.size()))
        html.replace(at, from.size(), to);
    return html;
}

} // namespace

std::string system_diff_page(const SystemDiffReport& r, std::string_view name_a, std::string_view name_b) {
    const double tol = r.cards.empty() ? r.cycles_tol_pct : r.cards.front().options.cycles_tol_pct;
    std::string b;
    b += fmt::format("<header><h1>System trace diff</h1><p class=\"sub\">cardsim trace diff report · A "
                     "(reference) {} · B {} · {} cards, compared card by card · durations within {} %</p>"
                     "</header>\n",
                     escape(name_a), escape(name_b), r.cards.size(), tol);
    b += "<nav><a href=\"#links\">links</a>";
    for (std::size_t k = 0; k < r.cards.size(); ++k)
        b += fmt::format(" <a href=\"#card-{0}\">card {0}</a>", k);
    b += " <a href=\"#text\">text report</a></nav>\n<main>\n";
    b += "<section id=\"figures\" class=\"cards\">\n";
    b += figure_card("verdict", r.agree() ? "agree" : "differ", r.verdict(), r.agree() ? "good" : "bad");
    std::size_t differing = 0;
    for (auto& l : r.links)
        differing += l.differs(r.cycles_tol_pct) ? 1 : 0;
    b += figure_card("links", fmt::format("{} of {} differ", differing, r.links.size()),
                     "ports, messages one by one, bytes or busy cycles", differing ? "bad" : "good");
    b +=
        "</section>\n<section id=\"links\">\n<h2>Links</h2>\n<table class=\"data sortable\" "
        "id=\"link-table\"><thead><tr><th>link</th><th>ports A</th><th>ports B</th><th>messages A</th>"
        "<th>messages B</th><th>messages differing</th><th>bytes A</th><th>bytes B</th><th>busy cycles A</th>"
        "<th>busy cycles B</th><th>change</th><th></th></tr></thead><tbody>\n";
    auto ports = [](bool listed, std::uint32_t p) { return listed ? std::to_string(p) : std::string("-"); };
    for (auto& l : r.links)
        b += fmt::format("<tr><td>{} -&gt; {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                         "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                         l.from, l.to, ports(l.in_a, l.ports_a), ports(l.in_b, l.ports_b), l.messages_a,
                         l.messages_b,
                         l.first_message ? fmt::format("{} (the first: message {})", l.messages_differing,
                                                       l.first_message->index)
                                         : std::string("0"),
                         l.bytes_a, l.bytes_b, l.busy_a, l.busy_b, escape(change(l.busy_a, l.busy_b)),
                         !l.in_a                       ? "only in B"
                         : !l.in_b                     ? "only in A"
                         : l.differs(r.cycles_tol_pct) ? "differs"
                                                       : "");
    b += "</tbody></table>\n</section>\n";
    for (std::size_t k = 0; k < r.cards.size(); ++k) {
        const auto& c = r.cards[k];
        const auto a = fmt::format("{} card {}", name_a, k), bn = fmt::format("{} card {}", name_b, k);
        b += fmt::format("<section id=\"card-{}\">\n<h2>Card {}</h2>\n", k, k);
        b += prefix_ids(cards(c) + units_section(c, a, bn) + phases_section(c, a, bn) + data_section(c) +
                            header_section(c) + commands_section(c) + structure_section(c),
                        fmt::format("card{}", k));
        b += "</section>\n";
    }
    b +=
        fmt::format("<section id=\"text\">\n<h2>Text report</h2>\n<p class=\"help\">What <code>cardsim trace "
                    "diff</code> prints for the same options.</p>\n<pre>{}</pre>\n</section>\n",
                    escape(to_text(r, name_a, name_b)));
    b += "</main>\n<div id=\"tooltip\" class=\"tooltip\" hidden></div>\n";
    return document(fmt::format("System trace diff {} → {} — cardsim report", name_a, name_b), b);
}

void write_system_diff_page(const std::filesystem::path& destination, const SystemDiffReport& report,
                            std::string_view name_a, std::string_view name_b) {
    io::write_file_atomically(destination, system_diff_page(report, name_a, name_b));
}

} // namespace cardsim::traces::report
