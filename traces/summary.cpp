#include "traces/summary.hpp"

#include "traces/lexical.hpp"
#include "traces/meta_view.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

namespace cardsim::traces {
namespace {

/// The cycles covered by the union of half-open intervals.
std::uint64_t union_length(std::vector<std::pair<std::uint64_t, std::uint64_t>> spans) {
    std::sort(spans.begin(), spans.end());
    std::uint64_t total = 0, covered_to = 0;
    bool any = false;
    for (auto [from, to] : spans) {
        if (any && from < covered_to) from = covered_to;
        if (to > from) total += to - from;
        covered_to = any ? std::max(covered_to, to) : to;
        any = true;
    }
    return total;
}

} // namespace

std::string unit_label(const Record& r) {
    return r.card ? fmt::format("card{}.{}", *r.card, r.unit) : r.unit;
}

Summary summarise(const Trace& t) {
    Summary s;
    s.cards = card_count(t.header);
    for (auto& l : t.header.links) {
        LinkBusy b{l.from, l.to, l.ports};
        for (auto& m : t.messages)
            if (m.from == l.from && m.to == l.to) {
                ++b.messages;
                b.bytes += m.bytes;
                b.busy_cycles += m.duration();
            }
        s.links.push_back(b);
    }
    s.commands = t.records.size();
    if (!t.records.empty()) {
        s.first_index = t.records.front().index;
        s.last_index = t.records.back().index;
    }
    if (t.header.ddr_channels) s.ddr.resize(*t.header.ddr_channels);
    std::map<std::string, std::size_t> unit_of;
    TimeByUnit time;
    std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans;
    for (auto& r : t.records) {
        s.cycles = std::max(s.cycles, r.end);
        s.read += r.read;
        s.written += r.written;
        if (!r.data.empty()) ++s.with_data;
        for (std::size_t c = 0; c < r.ddr.size() && c < s.ddr.size(); ++c) {
            s.ddr[c].read += r.ddr[c].read;
            s.ddr[c].written += r.ddr[c].written;
        }
        auto label = unit_label(r);
        auto [it, fresh] = unit_of.emplace(label, s.units.size());
        if (fresh) {
            s.units.push_back(UnitBusy{label});
            spans.emplace_back();
        }
        auto& u = s.units[it->second];
        ++u.commands;
        u.read += r.read;
        u.written += r.written;
        spans[it->second].emplace_back(r.start, r.end);
        if (r.split) time.add(label, *r.split);
    }
    s.time = time.units();
    for (std::size_t u = 0; u < s.units.size(); ++u)
        s.units[u].busy_cycles = union_length(std::move(spans[u]));
    return s;
}

std::string to_text(const Summary& s, const Header& h, std::string_view file, bool whole_meta) {
    std::string out;
    double us = static_cast<double>(s.cycles) / h.clock_mhz;
    out += fmt::format("trace {}: cardsim-trace {}, mode {}, clock {} MHz\n", file, version_of(h),
                       name(h.mode), format_clock(h.clock_mhz).value_or("?"));
    out += fmt::format("program {}  config {}\n", hex16(h.program), hex16(h.config));
    if (!h.cards.empty()) {
        out += fmt::format("system: {} cards, {} links\n", h.cards.size(), h.links.size());
        for (std::size_t k = 0; k < h.cards.size(); ++k)
            out += fmt::format("  card {}: program {}\n", k, hex16(h.cards[k]));
    }
    out += fmt::format("knob {}\n", numerics::to_string(h.knob));
    for (auto& [k, v] : h.meta) {
        if (meta_is_short(v))
            out += fmt::format("meta {} = {}\n", k, v);
        else if (whole_meta)
            out += fmt::format("meta {}:\n{}", k, meta_whole(v, "    "));
        else
            out += fmt::format("meta {}: {} (--meta shows it whole)\n", k, meta_brief(v));
    }
    if (s.commands == 0)
        out += "commands: 0\n";
    else if (s.cards > 1) // each card's indices are its own
        out += fmt::format("commands: {} on {} cards, {} carrying data\n", s.commands, s.cards, s.with_data);
    else
        out += fmt::format("commands: {} (indices {} to {}), {} carrying data\n", s.commands, s.first_index,
                           s.last_index, s.with_data);
    out += fmt::format("cycles: {} ({:.3f} us)\n", s.cycles, us);
    out += fmt::format("bytes: read {}, written {}\n", s.read, s.written);
    if (!s.ddr.empty()) {
        std::uint64_t total = 0;
        out += s.cards > 1 ? fmt::format("ddr (each channel summed over the {} cards):", s.cards) : "ddr:";
        for (std::size_t c = 0; c < s.ddr.size(); ++c) {
            out +=
                fmt::format("{} ch{} read {} written {}", c ? "," : "", c, s.ddr[c].read, s.ddr[c].written);
            total += s.ddr[c].read + s.ddr[c].written;
        }
        out += s.cycles ? fmt::format("; average {:.3f} GB/s\n", static_cast<double>(total) / us / 1000.0)
                        : "\n";
    }
    out += fmt::format("{:<16} {:>10} {:>14} {:>7} {:>14} {:>14}\n", "unit", "commands", "busy cycles",
                       "busy", "read", "written");
    for (auto& u : s.units) {
        double pct =
            s.cycles ? 100.0 * static_cast<double>(u.busy_cycles) / static_cast<double>(s.cycles) : 0.0;
        out += fmt::format("{:<16} {:>10} {:>14} {:>6.1f}% {:>14} {:>14}\n", u.unit, u.commands,
                           u.busy_cycles, pct, u.read, u.written);
    }
    for (auto& [label, text] : time_lines(s.time))
        out += label + ": " + text + "\n";
    for (auto& l : s.links) {
        double pct =
            s.cycles ? 100.0 * static_cast<double>(l.busy_cycles) / static_cast<double>(s.cycles) : 0.0;
        out += fmt::format("link {} -> {} ({} port{}): {} messages, {} bytes, busy {} cycles ({:.3f} us, "
                           "{:.2f} % of the run)\n",
                           l.from, l.to, l.ports, l.ports == 1 ? "" : "s", l.messages, l.bytes, l.busy_cycles,
                           static_cast<double>(l.busy_cycles) / h.clock_mhz, pct);
    }
    return out;
}

} // namespace cardsim::traces
