#include "traces/perfetto.hpp"

#include "engine/io/atomic_file.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace cardsim::traces {
namespace {

namespace json = boost::json;

/// The process id of a one-card trace's events (a system's card K: K + 1; its links: cards + 1).
constexpr std::int64_t card_pid = 1;

/// Where each record is drawn: its thread id; and the tracks, in tid order, with their names.
struct Tracks {
    std::vector<std::int64_t> tid;  ///< parallel to trace.records
    std::vector<std::string> names; ///< names[tid - 1]
};

/// Lays the records on per-unit lanes (greedy, by start cycle) and numbers the lanes, units in
/// order of first appearance.
Tracks lay_out(const Trace& t) {
    std::vector<std::string> units;
    std::map<std::string, std::size_t> unit_of;
    for (auto& r : t.records)
        if (unit_of.emplace(r.unit, units.size()).second) units.push_back(r.unit);

    std::vector<std::size_t> order(t.records.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return t.records[x].start < t.records[y].start; });
    std::vector<std::vector<std::uint64_t>> lane_end(units.size()); // per unit, per lane: end of last slice
    std::vector<std::size_t> lane(t.records.size());
    for (auto k : order) {
        auto& r = t.records[k];
        auto& lanes = lane_end[unit_of[r.unit]];
        std::size_t l = 0;
        while (l < lanes.size() && lanes[l] > r.start)
            ++l;
        if (l == lanes.size()) lanes.push_back(0);
        lanes[l] = std::max(r.end, r.start);
        lane[k] = l;
    }
    Tracks tracks;
    std::vector<std::int64_t> first_tid(units.size());
    for (std::size_t u = 0; u < units.size(); ++u) {
        first_tid[u] = static_cast<std::int64_t>(tracks.names.size()) + 1;
        for (std::size_t l = 0; l < lane_end[u].size(); ++l)
            tracks.names.push_back(l == 0 ? units[u] : fmt::format("{} #{}", units[u], l + 1));
    }
    for (std::size_t k = 0; k < t.records.size(); ++k)
        tracks.tid.push_back(first_tid[unit_of[t.records[k].unit]] + static_cast<std::int64_t>(lane[k]));
    return tracks;
}

/// A metadata (`M`) event naming the process (tid < 0) or a thread.
json::object metadata(const json::storage_ptr& sp, std::int64_t pid, std::string_view what, std::int64_t tid,
                      json::object args) {
    json::object e(sp);
    e["name"] = what;
    e["ph"] = "M";
    e["pid"] = pid;
    if (tid >= 0) e["tid"] = tid;
    e["args"] = std::move(args);
    return e;
}

/// The complete (`X`) event of one record on thread `tid`.
json::object slice(const json::storage_ptr& sp, const Record& r, std::int64_t pid, std::int64_t tid,
                   double mhz) {
    json::object args(sp);
    args.reserve(14 + time_part_count);
    args["index"] = r.index;
    args["unit"] = r.unit;
    args["opcode"] = r.opcode;
    args["start_cycle"] = r.start;
    args["end_cycle"] = r.end;
    args["cycles"] = r.duration();
    args["bytes_read"] = r.read;
    args["bytes_written"] = r.written;
    if (r.digest) args["digest"] = hex16(*r.digest);
    if (r.pc) args["pc"] = *r.pc;
    if (!r.ddr.empty()) {
        json::array ddr(sp);
        for (auto& c : r.ddr)
            ddr.push_back(json::array({c.read, c.written}, sp));
        args["ddr_read_written"] = std::move(ddr);
    }
    if (r.split) { // where its time went: what bound it, then every part, zeros included
        args["ready_cycle"] = r.ready();
        args["bound_by"] = name(r.split->largest());
        for (auto p : time_parts)
            args[fmt::format("split.{}", name(p))] = (*r.split)[p];
    }
    json::object e(sp);
    e.reserve(8);
    e["name"] = r.opcode;
    e["cat"] = r.unit;
    e["ph"] = "X";
    e["ts"] = static_cast<double>(r.start) / mhz;
    e["dur"] = static_cast<double>(r.duration()) / mhz;
    e["pid"] = pid;
    e["tid"] = tid;
    e["args"] = std::move(args);
    return e;
}

/// Appends counter events: `series[k]` gives, per record, the bytes of counter series k; each
/// series' rate is emitted in GB/s under `keys[k]` of the counter `counter`, at every cycle where
/// some series changes.
void bandwidth(const Trace& t, std::int64_t pid, std::string_view counter,
               const std::vector<std::string>& keys, const std::vector<std::vector<std::uint64_t>>& series,
               json::array& events) {
    double mhz = t.header.clock_mhz;
    // Per record: its interval and its rates (bytes per cycle) per series.
    struct Span {
        std::uint64_t from, to;
        std::size_t record;
    };
    std::vector<Span> spans;
    std::vector<std::uint64_t> cuts;
    for (std::size_t k = 0; k < t.records.size(); ++k) {
        auto& r = t.records[k];
        bool any = false;
        for (auto& s : series)
            any = any || s[k] > 0;
        if (!any) continue;
        std::uint64_t to = r.end > r.start ? r.end : r.start + 1;
        spans.push_back({r.start, to, k});
        cuts.push_back(r.start);
        cuts.push_back(to);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::stable_sort(spans.begin(), spans.end(), [](auto& x, auto& y) { return x.from < y.from; });

    std::map<std::size_t, std::uint64_t> active; // record -> end of its span
    std::size_t next = 0;
    std::vector<double> last(keys.size(), -1.0);
    for (auto cut : cuts) {
        for (auto it = active.begin(); it != active.end();)
            it = it->second <= cut ? active.erase(it) : std::next(it);
        while (next < spans.size() && spans[next].from == cut) {
            active.emplace(spans[next].record, spans[next].to);
            ++next;
        }
        std::vector<double> rate(keys.size(), 0.0);
        for (auto& [k, to] : active) {
            auto cycles = static_cast<double>(to - t.records[k].start);
            for (std::size_t s = 0; s < keys.size(); ++s)
                rate[s] += static_cast<double>(series[s][k]) / cycles * mhz / 1000.0;
        }
        for (auto& v : rate)
            v = std::round(v * 1e6) / 1e6; // 1 kB/s resolution keeps the file short
        if (rate == last) continue;
        last = rate;
        json::object args(events.storage());
        for (std::size_t s = 0; s < keys.size(); ++s)
            args[keys[s]] = rate[s];
        json::object e(events.storage());
        e.reserve(5);
        e["name"] = counter;
        e["ph"] = "C";
        e["ts"] = static_cast<double>(cut) / mhz;
        e["pid"] = pid;
        e["args"] = std::move(args);
        events.push_back(std::move(e));
    }
}

/// Appends the counter `counter` (key `key`): how many of the records `member` marks are in flight
/// (between their start and end; a record of no cycles for one cycle), at every cycle it changes.
void in_flight(const Trace& t, std::int64_t pid, std::string_view counter, std::string_view key,
               const std::vector<bool>& member, json::array& events) {
    std::vector<std::pair<std::uint64_t, int>> steps; // (cycle, +1 / -1)
    for (std::size_t k = 0; k < t.records.size(); ++k) {
        if (!member[k]) continue;
        auto& r = t.records[k];
        steps.emplace_back(r.start, +1);
        steps.emplace_back(r.end > r.start ? r.end : r.start + 1, -1);
    }
    std::sort(steps.begin(), steps.end());
    std::int64_t depth = 0, last = -1;
    for (std::size_t i = 0; i < steps.size();) {
        const std::uint64_t cycle = steps[i].first;
        for (; i < steps.size() && steps[i].first == cycle; ++i)
            depth += steps[i].second;
        if (depth == last) continue;
        last = depth;
        json::object args(events.storage());
        args[key] = depth;
        json::object e(events.storage());
        e.reserve(5);
        e["name"] = counter;
        e["ph"] = "C";
        e["ts"] = static_cast<double>(cycle) / t.header.clock_mhz;
        e["pid"] = pid;
        e["args"] = std::move(args);
        events.push_back(std::move(e));
    }
}

/// Appends the events of the one-card trace `t` as process `pid` named `process` (sorted by pid
/// in a `system`): a track per unit (lanes where its commands overlap), a slice per command, the
/// DDR bandwidth counters. Returns whether the bandwidth came from the ddr fields.
bool card_events(const Trace& t, std::int64_t pid, const std::string& process, bool system,
                 json::array& events) {
    const auto& sp = events.storage();
    double mhz = t.header.clock_mhz;
    auto args = [&](std::string_view key, json::value v) {
        json::object o(sp);
        o[key] = std::move(v);
        return o;
    };
    events.push_back(metadata(sp, pid, "process_name", -1, args("name", json::string(process, sp))));
    if (system) // a system's cards in order (one card's document: as before)
        events.push_back(metadata(sp, pid, "process_sort_index", -1, args("sort_index", pid)));
    auto tracks = lay_out(t);
    for (std::size_t i = 0; i < tracks.names.size(); ++i) {
        auto tid = static_cast<std::int64_t>(i) + 1;
        events.push_back(
            metadata(sp, pid, "thread_name", tid, args("name", json::string(tracks.names[i], sp))));
        events.push_back(metadata(sp, pid, "thread_sort_index", tid, args("sort_index", tid)));
    }
    for (std::size_t k = 0; k < t.records.size(); ++k)
        events.push_back(slice(sp, t.records[k], pid, tracks.tid[k], mhz));

    bool all_ddr = !t.records.empty() && t.header.ddr_channels &&
                   std::all_of(t.records.begin(), t.records.end(), [](auto& r) { return !r.ddr.empty(); });
    std::vector<std::uint64_t> total;
    for (auto& r : t.records) {
        std::uint64_t bytes = 0;
        if (all_ddr)
            for (auto& c : r.ddr)
                bytes += c.read + c.written;
        else
            bytes = r.read + r.written;
        total.push_back(bytes);
    }
    bandwidth(t, pid, "DDR bandwidth", {"GB/s"}, {total}, events);
    if (all_ddr)
        for (std::uint32_t c = 0; c < *t.header.ddr_channels; ++c) {
            std::vector<std::uint64_t> rd, wr;
            for (auto& r : t.records) {
                rd.push_back(r.ddr[c].read);
                wr.push_back(r.ddr[c].written);
            }
            bandwidth(t, pid, fmt::format("DDR channel {}", c), {"read GB/s", "write GB/s"}, {rd, wr},
                      events);
            std::vector<bool> uses(t.records.size());
            for (std::size_t k = 0; k < t.records.size(); ++k)
                uses[k] = rd[k] + wr[k] > 0;
            in_flight(t, pid, fmt::format("DDR channel {} queue depth", c), "commands", uses, events);
        }
    return all_ddr;
}

/// Appends a system's links as process `pid` (`links`): a track per link, a slice per message
/// over its wire interval with its bytes as args.
void link_events(const Trace& t, std::int64_t pid, json::array& events) {
    const auto& sp = events.storage();
    const double mhz = t.header.clock_mhz;
    auto args = [&](std::string_view key, json::value v) {
        json::object o(sp);
        o[key] = std::move(v);
        return o;
    };
    events.push_back(metadata(sp, pid, "process_name", -1, args("name", json::string("links", sp))));
    events.push_back(metadata(sp, pid, "process_sort_index", -1, args("sort_index", pid)));
    for (std::size_t i = 0; i < t.header.links.size(); ++i) {
        auto& l = t.header.links[i];
        auto tid = static_cast<std::int64_t>(i) + 1;
        events.push_back(
            metadata(sp, pid, "thread_name", tid,
                     args("name", json::string(fmt::format("link {} -> {} ({} port{})", l.from, l.to, l.ports,
                                                           l.ports == 1 ? "" : "s"),
                                               sp))));
        events.push_back(metadata(sp, pid, "thread_sort_index", tid, args("sort_index", tid)));
        for (auto& m : t.messages) {
            if (m.from != l.from || m.to != l.to) continue;
            json::object a(sp);
            a["from"] = m.from;
            a["to"] = m.to;
            a["bytes"] = m.bytes;
            a["start_cycle"] = m.start;
            a["end_cycle"] = m.end;
            json::object e(sp);
            e["name"] = "message";
            e["cat"] = "link";
            e["ph"] = "X";
            e["ts"] = static_cast<double>(m.start) / mhz;
            e["dur"] = static_cast<double>(m.duration()) / mhz;
            e["pid"] = pid;
            e["tid"] = tid;
            e["args"] = std::move(a);
            events.push_back(std::move(e));
        }
    }
}

/// The document of `t`, every part allocated from `sp`: one process for a trace of one card; a
/// system's: a process per card (its units' tracks) and one for its links (a track per link).
json::object build(const Trace& t, const json::storage_ptr& sp) {
    double mhz = t.header.clock_mhz;
    json::array events(sp);
    events.reserve(t.records.size() * 3 + 16);
    bool all_ddr = true;
    if (t.header.cards.empty())
        all_ddr = card_events(
            t, card_pid,
            fmt::format("cardsim card (program {}, {})", hex16(t.header.program), name(t.header.mode)), false,
            events);
    else {
        const auto n = card_count(t.header);
        for (std::uint32_t k = 0; k < n; ++k)
            all_ddr = card_events(card_trace(t, k), card_pid + k,
                                  fmt::format("cardsim card {} (program {}, {})", k, hex16(t.header.cards[k]),
                                              name(t.header.mode)),
                                  true, events) &&
                      all_ddr;
        link_events(t, card_pid + n, events);
    }

    // Meta values as they are (a card's TOML keeps its lines); escaped as the trace spells them
    // only when a byte would not be text.
    json::object meta(sp);
    for (auto& [k, v] : t.header.meta) {
        const bool text = std::all_of(
            v.begin(), v.end(), [](char c) { return c == '\t' || c == '\n' || (c >= 0x20 && c <= 0x7e); });
        meta[k] = text ? v : escape(v);
    }
    json::object other(sp);
    other["format"] = fmt::format("cardsim-trace {}", version_of(t.header));
    if (!t.header.cards.empty()) other["cards"] = t.header.cards.size();
    other["program"] = hex16(t.header.program);
    other["config"] = hex16(t.header.config);
    other["knob"] = numerics::to_string(t.header.knob);
    other["mode"] = name(t.header.mode);
    other["clock_mhz"] = mhz;
    other["bandwidth_source"] = all_ddr ? "ddr fields" : "operand bytes (read + written)";
    other["meta"] = std::move(meta);

    json::object doc(sp);
    doc["traceEvents"] = std::move(events);
    doc["displayTimeUnit"] = "ns";
    doc["otherData"] = std::move(other);
    return doc;
}

} // namespace

boost::json::object perfetto_json(const Trace& trace) {
    return build(trace, {});
}

std::string to_perfetto(const Trace& trace) {
    // A build-once document: allocate it from one arena released at the end.
    auto arena = json::make_shared_resource<json::monotonic_resource>();
    return json::serialize(build(trace, arena)) + "\n";
}

void write_perfetto(const std::filesystem::path& destination, const Trace& trace) {
    io::write_file_atomically(destination, to_perfetto(trace));
}

} // namespace cardsim::traces
