#include "traces/vcd.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace cardsim::traces {
namespace {

/// The identifier code of variable `k`: printable ASCII 33..126, base 94, as VCD writers number them.
std::string id_code(std::size_t k) {
    std::string s;
    do {
        s += static_cast<char>(33 + k % 94);
        k /= 94;
    } while (k);
    return s;
}

/// One variable of the dump: its scope path, name, width (1: a wire) and its value at each cycle
/// where it changes, in cycle order.
struct Var {
    std::vector<std::string> scope;
    std::string name;
    unsigned width = 1;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> changes; ///< (cycle, new value)
};

/// How many of the intervals [from, to) (empty ones left out) are open at each cycle where that
/// changes, as (cycle, count) in cycle order; the largest count in `peak`.
std::vector<std::pair<std::uint64_t, std::uint64_t>>
in_flight(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans, std::uint64_t& peak) {
    std::vector<std::pair<std::uint64_t, int>> steps;
    for (auto [from, to] : spans)
        if (to > from) steps.emplace_back(from, +1), steps.emplace_back(to, -1);
    std::sort(steps.begin(), steps.end());
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    std::int64_t depth = 0;
    peak = 0;
    for (std::size_t i = 0; i < steps.size();) {
        const auto cycle = steps[i].first;
        for (; i < steps.size() && steps[i].first == cycle; ++i)
            depth += steps[i].second;
        peak = std::max(peak, static_cast<std::uint64_t>(depth));
        if (out.empty() || out.back().second != static_cast<std::uint64_t>(depth))
            out.emplace_back(cycle, static_cast<std::uint64_t>(depth));
    }
    return out;
}

/// A value as a VCD value change of variable `v` with code `id`.
std::string change(const Var& v, std::uint64_t value, const std::string& id) {
    if (v.width == 1) return fmt::format("{}{}\n", value ? 1 : 0, id);
    return fmt::format("b{:b} {}\n", value, id);
}

/// Appends the variables of the one-card trace `t` under `scope`: per unit its busy wire (and its
/// commands in flight when they overlap), per DDR channel its commands in flight; raises `last` to
/// its latest end.
void card_vars(const Trace& t, const std::string& scope, std::vector<Var>& vars, std::uint64_t& last) {
    std::vector<std::string> units;
    std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans;
    for (auto& r : t.records) {
        if (!spans.count(r.unit)) units.push_back(r.unit);
        spans[r.unit].emplace_back(r.start, r.end);
        last = std::max(last, r.end);
    }
    for (auto& u : units) {
        std::uint64_t peak = 0;
        auto count = in_flight(spans[u], peak);
        Var busy{{scope, u}, "busy", 1, {}};
        for (auto& [cycle, n] : count)
            if (busy.changes.empty() || (busy.changes.back().second != 0) != (n != 0))
                busy.changes.emplace_back(cycle, n ? 1 : 0);
        vars.push_back(std::move(busy));
        if (peak > 1) vars.push_back(Var{{scope, u}, "commands", 32, std::move(count)});
    }
    // Per DDR channel, the commands with traffic on it in flight.
    const bool all_ddr = !t.records.empty() && t.header.ddr_channels &&
                         std::all_of(t.records.begin(), t.records.end(),
                                     [&](auto& r) { return r.ddr.size() == *t.header.ddr_channels; });
    if (all_ddr)
        for (std::uint32_t c = 0; c < *t.header.ddr_channels; ++c) {
            std::vector<std::pair<std::uint64_t, std::uint64_t>> on;
            for (auto& r : t.records)
                if (r.ddr[c].read + r.ddr[c].written) on.emplace_back(r.start, r.end);
            std::uint64_t peak = 0;
            vars.push_back(
                Var{{scope, "ddr", fmt::format("channel{}", c)}, "active", 32, in_flight(on, peak)});
        }
}

} // namespace

std::string to_vcd(const Trace& t) {
    // One card: its variables under `card`; a system: each card's under `cardK`, and per link a
    // `busy` wire (its messages on the wire) under `links.linkFROMtoTO`.
    std::vector<Var> vars;
    std::uint64_t last = 0;
    if (t.header.cards.empty())
        card_vars(t, "card", vars, last);
    else {
        for (std::uint32_t k = 0; k < card_count(t.header); ++k)
            card_vars(card_trace(t, k), fmt::format("card{}", k), vars, last);
        for (auto& l : t.header.links) {
            std::vector<std::pair<std::uint64_t, std::uint64_t>> on;
            for (auto& m : t.messages)
                if (m.from == l.from && m.to == l.to) {
                    on.emplace_back(m.start, m.end);
                    last = std::max(last, m.end);
                }
            std::uint64_t peak = 0;
            Var busy{{"links", fmt::format("link{}to{}", l.from, l.to)}, "busy", 1, {}};
            for (auto& [cycle, n] : in_flight(on, peak))
                if (busy.changes.empty() || (busy.changes.back().second != 0) != (n != 0))
                    busy.changes.emplace_back(cycle, n ? 1 : 0);
            vars.push_back(std::move(busy));
        }
    }

    std::string out = fmt::format("$version cardsim trace export (program {}, mode {}, clock {} MHz) $end\n",
                                  hex16(t.header.program), name(t.header.mode),
                                  format_clock(t.header.clock_mhz).value_or("?"));
    out += "$timescale 1ps $end\n";
    std::vector<std::string> open; // the scopes open now
    for (std::size_t k = 0; k < vars.size(); ++k) {
        auto& v = vars[k];
        std::size_t common = 0;
        while (common < open.size() && common < v.scope.size() && open[common] == v.scope[common])
            ++common;
        for (; open.size() > common; open.pop_back())
            out += "$upscope $end\n";
        for (; open.size() < v.scope.size(); open.push_back(v.scope[open.size()]))
            out += fmt::format("$scope module {} $end\n", v.scope[open.size()]);
        out += fmt::format("$var {} {} {} {} $end\n", v.width == 1 ? "wire" : "integer", v.width, id_code(k),
                           v.name);
    }
    for (; !open.empty(); open.pop_back())
        out += "$upscope $end\n";
    out += "$enddefinitions $end\n";

    // Every change as (picoseconds, variable, value), in time order; at one time the last one a
    // variable takes (two cycles one picosecond apart only on a clock above 1 THz).
    const long double ps_per_cycle = 1e6L / static_cast<long double>(t.header.clock_mhz);
    auto ps = [&](std::uint64_t cycle) {
        const long double at = std::round(static_cast<long double>(cycle) * ps_per_cycle);
        // VCD times are integers of picoseconds: a cycle past 2^63 ps (about 107 days of card time) has none.
        if (!(at < 0x1p63L))
            throw Error(fmt::format("cycle {} at {} MHz lies past 2^63 picoseconds, the longest time a VCD "
                                    "file here can hold",
                                    cycle, t.header.clock_mhz));
        return static_cast<std::uint64_t>(at);
    };
    struct Change {
        std::uint64_t time;
        std::size_t var;
        std::uint64_t value;
    };
    std::vector<Change> changes;
    for (std::size_t k = 0; k < vars.size(); ++k)
        for (auto& [cycle, value] : vars[k].changes)
            changes.push_back({ps(cycle), k, value});
    std::stable_sort(changes.begin(), changes.end(), [](auto& a, auto& b) { return a.time < b.time; });
    std::vector<std::uint64_t> value(vars.size(), 0);
    std::size_t i = 0;
    for (; i < changes.size() && changes[i].time == 0; ++i)
        value[changes[i].var] = changes[i].value;
    out += "#0\n$dumpvars\n";
    for (std::size_t k = 0; k < vars.size(); ++k)
        out += change(vars[k], value[k], id_code(k));
    out += "$end\n";
    while (i < changes.size()) {
        const auto time = changes[i].time;
        std::map<std::size_t, std::uint64_t> at; // variable -> its value after this time
        for (; i < changes.size() && changes[i].time == time; ++i)
            at[changes[i].var] = changes[i].value;
        std::string lines;
        for (auto [k, v] : at)
            if (v != value[k]) lines += change(vars[k], v, id_code(k)), value[k] = v;
        if (!lines.empty()) out += fmt::format("#{}\n", time) + lines;
    }
    if (ps(last) > 0 && (changes.empty() || ps(last) > changes.back().time))
        out += fmt::format("#{}\n", ps(last));
    return out;
}

void write_vcd(const std::filesystem::path& destination, const Trace& trace) {
    io::write_file_atomically(destination, to_vcd(trace));
}

} // namespace cardsim::traces
