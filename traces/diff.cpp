#include "traces/diff.hpp"

#include "engine/error.hpp"
#include "traces/lexical.hpp"
#include "traces/meta_view.hpp"
#include "traces/summary.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>

namespace cardsim::traces {
namespace {

/// The concatenated bytes of a record's data blocks, with each block's start offset.
struct Stream {
    std::vector<std::uint8_t> bytes;
    std::vector<std::size_t> starts; ///< parallel to the record's data blocks
};

/// The record's data blocks concatenated.
Stream concatenate(const Record& r) {
    Stream s;
    for (auto& b : r.data) {
        s.starts.push_back(s.bytes.size());
        s.bytes.insert(s.bytes.end(), b.bytes.begin(), b.bytes.end());
    }
    return s;
}

/// The block of `r` holding byte `p` of its concatenated data, or -1.
int block_at(const Record& r, const Stream& s, std::size_t p) {
    for (std::size_t i = 0; i < r.data.size(); ++i)
        if (p >= s.starts[i] && p < s.starts[i] + r.data[i].bytes.size()) return static_cast<int>(i);
    return -1;
}

/// The little-endian element of `size` bytes at `offset` in `bytes`, if it lies inside.
std::optional<std::uint32_t> element_bits(const std::vector<std::uint8_t>& bytes, std::size_t offset,
                                          std::size_t size) {
    if (offset + size > bytes.size()) return std::nullopt;
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < size; ++i)
        v |= static_cast<std::uint32_t>(bytes[offset + i]) << (8 * i);
    return v;
}

/// The first differing element of two records that both carry data, or nothing when their data
/// is equal.
std::optional<ElementDifference> first_element(const Record& a, const Record& b) {
    auto sa = concatenate(a), sb = concatenate(b);
    std::size_t n = std::min(sa.bytes.size(), sb.bytes.size()), p = 0;
    while (p < n && sa.bytes[p] == sb.bytes[p])
        ++p;
    if (p == n && sa.bytes.size() == sb.bytes.size()) return std::nullopt;
    int ia = block_at(a, sa, p), ib = block_at(b, sb, p);
    ElementDifference d;
    if (ia >= 0 && ib >= 0) {
        auto& ba = a.data[static_cast<std::size_t>(ia)];
        auto& bb = b.data[static_cast<std::size_t>(ib)];
        auto start_a = sa.starts[static_cast<std::size_t>(ia)],
             start_b = sb.starts[static_cast<std::size_t>(ib)];
        if (ba.operand == bb.operand && start_a == start_b && ba.encoding == bb.encoding) {
            auto size = element_size(ba.encoding);
            d.operand = ba.operand;
            d.encoding = ba.encoding;
            d.element = (p - start_a) / size;
            auto offset = start_a + d.element * size;
            d.bits_a = element_bits(sa.bytes, offset, size);
            d.bits_b = element_bits(sb.bytes, offset, size);
            return d;
        }
    }
    // The sides split or spell the bytes differently: name the byte.
    bool use_a = ia >= 0;
    auto& blocks = use_a ? a.data : b.data;
    auto& starts = use_a ? sa.starts : sb.starts;
    auto i = static_cast<std::size_t>(use_a ? ia : ib);
    d.operand = blocks[i].operand;
    d.encoding = Encoding::Hex;
    d.element = p - starts[i];
    d.bits_a = element_bits(sa.bytes, p, 1);
    d.bits_b = element_bits(sb.bytes, p, 1);
    return d;
}

/// An IEEE binary16 bit pattern as a float (exactly).
float half_to_float(std::uint32_t h) {
    std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    float v;
    if (exp == 0)
        v = std::ldexp(static_cast<float>(frac), -24);
    else if (exp == 31)
        v = frac ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else
        v = std::ldexp(static_cast<float>(frac | 0x400), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}

/// One side's element: its bit pattern, and its value when it is a float.
std::string show_bits(std::optional<std::uint32_t> bits, Encoding e) {
    if (!bits) return "absent";
    switch (e) {
    case Encoding::Hex:
        return fmt::format("0x{:02x}", *bits);
    case Encoding::F16:
        return fmt::format("0x{:04x} ({})", *bits, half_to_float(*bits));
    case Encoding::F32:
        return fmt::format("0x{:08x} ({})", *bits, std::bit_cast<float>(*bits));
    }
    return "?";
}

/// `command N (unit/opcode)`.
std::string label(std::uint64_t index, std::string_view unit, std::string_view opcode) {
    return fmt::format("command {} ({}/{})", index, unit, opcode);
}

/// `b - a` as a signed number (`+12`, `-3`, `+0`).
std::string signed_delta(std::uint64_t a, std::uint64_t b) {
    return b >= a ? fmt::format("+{}", b - a) : fmt::format("-{}", a - b);
}

/// `|b - a|`.
std::uint64_t distance(std::uint64_t a, std::uint64_t b) {
    return a > b ? a - b : b - a;
}

/// Index lists as ranges: `5, 7-9, 12`.
std::string ranges(const std::vector<std::uint64_t>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size();) {
        std::size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1)
            ++j;
        out += out.empty() ? "" : ", ";
        out += i == j ? fmt::format("{}", v[i]) : fmt::format("{}-{}", v[i], v[j]);
        i = j + 1;
    }
    return out;
}

/// `N thing` or `N things`.
std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

/// A ddr_channels value, or `absent`.
std::string channels(const std::optional<std::uint32_t>& c) {
    return c ? std::to_string(*c) : "absent";
}

/// A tolerance as the reports spell it (`5%`).
std::string pct_text(double pct) {
    return fmt::format("{}%", pct);
}

/// Throws cardsim::Error when the records of `t` are not in strictly increasing index order.
void check_sorted(const Trace& t, std::string_view side) {
    for (std::size_t i = 1; i < t.records.size(); ++i)
        if (t.records[i].index <= t.records[i - 1].index)
            throw Error(
                fmt::format("trace {}: command {} follows command {}, expected strictly increasing indices",
                            side, t.records[i].index, t.records[i - 1].index));
}

/// Throws cardsim::Error when `pct` is not a non-negative finite per cent.
void check_tolerance(double pct, std::string_view what) {
    if (!std::isfinite(pct) || pct < 0)
        throw Error(
            fmt::format("the {} tolerance is {}%, expected a non-negative number of per cent", what, pct));
}

/// Adds the config-key differences and notes of the two headers' recorded configs to `r`.
void compare_config(const Header& a, const Header& b, DiffReport& r) {
    auto ra = recorded_config(a), rb = recorded_config(b);
    if (ra.problem) r.notes.push_back("A's config keys: " + *ra.problem);
    if (rb.problem) r.notes.push_back("B's config keys: " + *rb.problem);
    if (ra.config)
        if (auto p = check_recorded_config(*ra.config, a.config)) r.notes.push_back("A: " + *p);
    if (rb.config)
        if (auto p = check_recorded_config(*rb.config, b.config)) r.notes.push_back("B: " + *p);
    if (ra.config && rb.config)
        r.config = config_differences(*ra.config, *rb.config);
    else if (ra.config || rb.config)
        r.notes.push_back(fmt::format("config keys: only {} records them (the other header has no config "
                                      "keys), so a config difference is named by its digest only",
                                      ra.config ? "A" : "B"));
}

/// How many measured entries a summary of `meta measured` spells out.
constexpr std::size_t measured_shown = 3;

/// `t`'s `meta measured`, summarised: its count of commands, per opcode (from the trace's records;
/// `?` for an index without one), and its first entries. A malformed value is the reader's error.
std::string measured_summary(const Trace& t) {
    std::vector<Measured> m;
    try {
        m = measured_of(t.header);
    } catch (const Error& e) {
        return fmt::format("malformed ({})", e.what());
    }
    std::map<std::uint64_t, const Record*> by_index;
    for (auto& rec : t.records)
        by_index.emplace(rec.index, &rec);
    std::map<std::string, std::size_t> per_opcode;
    for (auto& x : m) {
        auto it = by_index.find(x.index);
        ++per_opcode[it == by_index.end() ? std::string("?") : it->second->opcode];
    }
    std::string kinds, first;
    for (auto& [op, n] : per_opcode)
        kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", op, n);
    for (std::size_t i = 0; i < m.size() && i < measured_shown; ++i)
        first += fmt::format(" {}:{}:{}", m[i].index, m[i].work, m[i].cycles);
    return fmt::format("{} command{} ({}), first{}{}", m.size(), m.size() == 1 ? "" : "s", kinds, first,
                       m.size() > measured_shown ? " ..." : "");
}

/// Adds the header mismatches and notes of `a` against `b` to `r`; `meta measured` is summarised
/// (measured_summary), every other meta key by meta_difference (a long value is never quoted whole).
void compare_header(const Trace& ta, const Trace& tb, DiffReport& r) {
    const Header &a = ta.header, &b = tb.header;
    auto field = [&](std::string name, std::string va, std::string vb) {
        if (va != vb) r.header.push_back({std::move(name), std::move(va), std::move(vb)});
    };
    field("program", hex16(a.program), hex16(b.program));
    field("config", hex16(a.config), hex16(b.config));
    field("knob", numerics::to_string(a.knob), numerics::to_string(b.knob));
    field("clock_mhz", format_clock(a.clock_mhz).value_or("?"), format_clock(b.clock_mhz).value_or("?"));
    // Optional in the format (a minimal producer leaves it out): compared when both sides say it.
    if (a.ddr_channels && b.ddr_channels)
        field("ddr_channels", channels(a.ddr_channels), channels(b.ddr_channels));
    else if (a.ddr_channels != b.ddr_channels)
        r.notes.push_back(
            fmt::format("ddr_channels: A {}, B {}", channels(a.ddr_channels), channels(b.ddr_channels)));
    if (a.mode != b.mode) r.notes.push_back(fmt::format("mode: A {}, B {}", name(a.mode), name(b.mode)));
    std::set<std::string> keys;
    for (auto& [k, v] : a.meta)
        keys.insert(k);
    for (auto& [k, v] : b.meta)
        keys.insert(k);
    for (auto& k : keys) {
        if (is_config_meta(k)) continue;
        auto ia = a.meta.find(k), ib = b.meta.find(k);
        if (k == measured_meta) {
            auto summary = [](auto it, auto& m, const Trace& t) {
                return it == m.end() ? std::string("absent") : measured_summary(t);
            };
            if (ia == a.meta.end() || ib == b.meta.end() || ia->second != ib->second)
                r.notes.push_back(
                    fmt::format("meta {}: A {}; B {}", k, summary(ia, a.meta, ta), summary(ib, b.meta, tb)));
            continue;
        }
        auto value = [](auto it, auto& m) {
            return it == m.end() ? std::nullopt : std::optional<std::string_view>(it->second);
        };
        if (ia == a.meta.end() || ib == b.meta.end() || ia->second != ib->second)
            r.notes.push_back(
                fmt::format("meta {}: {}", k, meta_difference(value(ia, a.meta), value(ib, b.meta))));
    }
    compare_config(a, b, r);
}

/// Adds the shape mismatches of the paired records to `r`. When the sides have different channel
/// counts, the DDR bytes are compared over all channels.
void compare_shape(const Record& a, const Record& b, DiffReport& r) {
    auto field = [&](std::string name, std::string va, std::string vb) {
        if (va != vb) r.shapes.push_back({a.index, std::move(name), std::move(va), std::move(vb)});
    };
    field("unit", a.unit, b.unit);
    field("opcode", a.opcode, b.opcode);
    field("read", std::to_string(a.read), std::to_string(b.read));
    field("written", std::to_string(a.written), std::to_string(b.written));
    if (a.pc && b.pc) field("pc", std::to_string(*a.pc), std::to_string(*b.pc));
    if (a.ddr.empty() || b.ddr.empty()) return;
    if (a.ddr.size() == b.ddr.size()) {
        for (std::size_t c = 0; c < a.ddr.size(); ++c) {
            field(fmt::format("ddr[{}].read", c), std::to_string(a.ddr[c].read),
                  std::to_string(b.ddr[c].read));
            field(fmt::format("ddr[{}].written", c), std::to_string(a.ddr[c].written),
                  std::to_string(b.ddr[c].written));
        }
        return;
    }
    auto sum = [](const std::vector<ChannelBytes>& v, bool read) {
        std::uint64_t s = 0;
        for (auto& c : v)
            s += read ? c.read : c.written;
        return std::to_string(s);
    };
    field("ddr.read", sum(a.ddr, true), sum(b.ddr, true));
    field("ddr.written", sum(a.ddr, false), sum(b.ddr, false));
}

/// The step a record ran in, as its index's offset from its pc (index = step × commands + pc);
/// 0 when it has no pc (its index is its pc).
std::uint64_t step_key(const Record& r) {
    return r.pc && *r.pc <= r.index ? r.index - *r.pc : 0;
}

/// The phases of the two runs and which phase each step belongs to.
struct Phases {
    std::vector<PhaseCycles> list;
    std::map<std::uint64_t, std::size_t> of_step; ///< step key -> phase
};

/// The prefill step count a header's meta gives, with a note when it is malformed.
std::optional<std::uint64_t> prefill_steps(const Header& h, std::string_view side, DiffReport& r) {
    auto it = h.meta.find(std::string(prefill_steps_meta));
    if (it == h.meta.end()) return std::nullopt;
    auto n = parse_u64(it->second);
    if (!n)
        r.notes.push_back(fmt::format("{}: meta {} is `{}`, expected a number of steps; phases are steps",
                                      side, prefill_steps_meta, escape(it->second)));
    return n;
}

/// Splits the steps of both traces into phases (the prefill when a header says how many steps ran
/// the prompt, then each decode step; else each step) and counts each side's cycles in each.
Phases phases_of(const Trace& a, const Trace& b, DiffReport& r) {
    std::set<std::uint64_t> steps;
    for (auto* t : {&a, &b})
        for (auto& rec : t->records)
            steps.insert(step_key(rec));
    auto pa = prefill_steps(a.header, "A", r), pb = prefill_steps(b.header, "B", r);
    auto prefill = pa ? pa : pb;
    if (pa && pb && *pa != *pb)
        r.notes.push_back(fmt::format("prefill steps: A {}, B {}; the phases follow A's", *pa, *pb));
    Phases p;
    // A side whose records carry no `pc` (a minimal producer, FORMAT.md §9) puts every command in
    // step 0: its steps cannot be matched with the other side's, so both are one phase.
    const auto stepped = [](const Trace& t) {
        return std::any_of(t.records.begin(), t.records.end(),
                           [](const Record& x) { return x.pc.has_value(); });
    };
    if (stepped(a) != stepped(b)) {
        r.notes.push_back(fmt::format("phases: {} records no steps (no pc=), so the run is one phase",
                                      stepped(a) ? "B" : "A"));
        p.list.push_back(PhaseCycles{"run", 0, steps.empty() ? 0 : steps.size() - 1});
        for (auto key : steps)
            p.of_step[key] = 0;
        for (int side = 0; side < 2; ++side) {
            auto& t = side == 0 ? a : b;
            std::uint64_t end = 0;
            for (auto& rec : t.records)
                end = std::max(end, rec.end);
            (side == 0 ? p.list[0].cycles_a : p.list[0].cycles_b) = end;
            (side == 0 ? p.list[0].commands_a : p.list[0].commands_b) = t.records.size();
        }
        return p;
    }
    std::uint64_t ordinal = 0;
    for (auto key : steps) {
        bool in_prefill = prefill && ordinal < *prefill;
        if (!(in_prefill && ordinal > 0)) {
            std::string name = in_prefill          ? std::string("prefill")
                               : prefill           ? fmt::format("decode {}", ordinal - *prefill + 1)
                               : steps.size() == 1 ? std::string("run")
                                                   : fmt::format("step {}", ordinal);
            p.list.push_back(PhaseCycles{std::move(name), ordinal, ordinal});
        }
        p.list.back().last_step = ordinal;
        p.of_step[key] = p.list.size() - 1;
        ++ordinal;
    }
    for (int side = 0; side < 2; ++side) {
        auto& t = side == 0 ? a : b;
        std::vector<std::uint64_t> end(p.list.size(), 0);
        for (auto& rec : t.records) {
            auto k = p.of_step.at(step_key(rec));
            end[k] = std::max(end[k], rec.end);
            ++(side == 0 ? p.list[k].commands_a : p.list[k].commands_b);
        }
        std::uint64_t previous = 0;
        for (std::size_t k = 0; k < p.list.size(); ++k) {
            (side == 0 ? p.list[k].cycles_a : p.list[k].cycles_b) = end[k] > previous ? end[k] - previous : 0;
            previous = std::max(previous, end[k]);
        }
    }
    return p;
}

/// Each unit's busy cycles, bytes and summed waits on both sides, the largest change in busy
/// cycles first (then the busiest in A, then by name).
std::vector<UnitChange> units_of(const Trace& a, const Trace& b, const Summary& sa, const Summary& sb,
                                 WaitFields waits) {
    std::map<std::string, UnitChange> by_name;
    std::map<std::string, std::map<std::string, WaitChange>> wait_sums;
    for (int side = 0; side < 2; ++side) {
        for (auto& u : (side == 0 ? sa : sb).units) {
            auto& c = by_name[u.unit];
            c.unit = u.unit;
            (side == 0 ? c.commands_a : c.commands_b) = u.commands;
            (side == 0 ? c.busy_a : c.busy_b) = u.busy_cycles;
            (side == 0 ? c.read_a : c.read_b) = u.read;
            (side == 0 ? c.written_a : c.written_b) = u.written;
        }
        for (auto& rec : (side == 0 ? a : b).records)
            for (auto& w : waits(rec)) {
                auto& sum = wait_sums[rec.unit][w.name];
                sum.name = w.name;
                sum.own = w.own;
                auto& v = side == 0 ? sum.a : sum.b;
                v = v.value_or(0) + w.cycles;
            }
    }
    std::vector<UnitChange> out;
    for (auto& [name, c] : by_name) {
        for (auto& [wname, w] : wait_sums[name])
            c.waits.push_back(w);
        out.push_back(std::move(c));
    }
    std::stable_sort(out.begin(), out.end(), [](const UnitChange& x, const UnitChange& y) {
        auto dx = distance(x.busy_a, x.busy_b), dy = distance(y.busy_a, y.busy_b);
        if (dx != dy) return dx > dy;
        return x.busy_a > y.busy_a;
    });
    return out;
}

/// Whether a part of a command's duration moved from `a` to `b` by more than `pct` per cent of the
/// command's duration in A (`duration`): a part is weighed against the command's time, so a part
/// of a few cycles moving by one is not a change of the command.
bool part_deviates(std::uint64_t a, std::uint64_t b, std::uint64_t duration, double pct) {
    return static_cast<long double>(distance(a, b)) * 100.0L >
           static_cast<long double>(pct) * static_cast<long double>(duration);
}

/// The duration and the waits both sides carry of a paired command, compared within `tol`.
DurationChange duration_change(const Record& ra, const Record& rb, double tol, WaitFields waits) {
    DurationChange d;
    d.index = ra.index;
    d.pc = ra.pc;
    d.unit = ra.unit;
    d.opcode = ra.opcode;
    d.a = ra.duration();
    d.b = rb.duration();
    d.over = deviates(d.a, d.b, tol);
    auto wb = waits(rb);
    for (auto& w : waits(ra)) {
        auto it = std::find_if(wb.begin(), wb.end(), [&](const WaitPart& x) { return x.name == w.name; });
        if (it == wb.end()) continue;
        d.waits.push_back(WaitChange{w.name, w.cycles, it->cycles,
                                     w.own && part_deviates(w.cycles, it->cycles, d.a, tol), w.own});
    }
    return d;
}

} // namespace

std::vector<WaitPart> record_waits(const Record& record) {
    std::vector<WaitPart> parts;
    if (!record.split) return parts;
    parts.reserve(time_part_count);
    for (auto p : time_parts)
        parts.push_back(WaitPart{std::string(name(p)), (*record.split)[p], !before_start(p)});
    return parts;
}

std::uint64_t DurationChange::magnitude() const {
    std::uint64_t m = distance(a, b);
    for (auto& w : waits)
        if (w.own && w.a && w.b) m = std::max(m, distance(*w.a, *w.b));
    return m;
}

bool deviates(std::uint64_t a, std::uint64_t b, double pct) {
    auto d = static_cast<long double>(a > b ? a - b : b - a);
    return d * 100.0L > static_cast<long double>(pct) * static_cast<long double>(a);
}

std::string change(std::uint64_t a, std::uint64_t b) {
    if (a == 0) return b == 0 ? "+0.00%" : "from 0";
    double pct = (static_cast<double>(b) - static_cast<double>(a)) * 100.0 / static_cast<double>(a);
    return fmt::format("{:+.2f}%", pct);
}

DiffReport diff(const Trace& a, const Trace& b, double tol) {
    DiffOptions o;
    o.cycles_tol_pct = tol;
    o.start_tol_pct = tol;
    return diff(a, b, o);
}

DiffReport diff(const Trace& a, const Trace& b, const DiffOptions& options) {
    if (!a.header.cards.empty() || !b.header.cards.empty())
        throw Error(
            "a system trace (several cards) compares card by card: diff_system (traces/system_diff.hpp)");
    check_tolerance(options.cycles_tol_pct, "cycle");
    if (options.start_tol_pct) check_tolerance(*options.start_tol_pct, "start");
    if (options.sites && options.sites->program != a.header.program &&
        options.sites->program != b.header.program)
        throw Error(
            fmt::format("the program given for the layers has digest {}, but trace A ran {} and B ran {}: "
                        "give the program one of them ran",
                        hex16(options.sites->program), hex16(a.header.program), hex16(b.header.program)));
    check_sorted(a, "A");
    check_sorted(b, "B");
    const double tol = options.cycles_tol_pct;
    DiffReport r;
    r.options = options;
    r.commands_a = a.records.size();
    r.commands_b = b.records.size();
    r.clock_mhz_a = a.header.clock_mhz;
    r.clock_mhz_b = b.header.clock_mhz;
    compare_header(a, b, r);

    auto sa = summarise(a), sb = summarise(b);
    r.total = TotalCycles{sa.cycles, sb.cycles, deviates(sa.cycles, sb.cycles, tol)};
    auto phases = phases_of(a, b, r);
    r.phases = phases.list;
    r.units = units_of(a, b, sa, sb, options.waits);

    bool digests_a = a.header.mode != Mode::TimingOnly, digests_b = b.header.mode != Mode::TimingOnly;
    r.data_compared = digests_a && digests_b;
    if (digests_a != digests_b)
        r.data_uncomparable =
            fmt::format("{} is timing-only (no digests), {} is {}", digests_a ? "B" : "A",
                        digests_a ? "A" : "B", name(digests_a ? a.header.mode : b.header.mode));

    // A measuring side (an RTL co-simulation, the card's counters) keeps the model's timeline on its
    // cmd lines and what it counted in `meta measured`: those commands' durations are the measured
    // cycles (FORMAT.md, meta `measured`).
    std::map<std::uint64_t, std::uint64_t> measured_a, measured_b;
    for (auto& m : measured_of(a.header))
        measured_a[m.index] = m.cycles;
    for (auto& m : measured_of(b.header))
        measured_b[m.index] = m.cycles;
    if (!measured_a.empty() || !measured_b.empty())
        r.notes.push_back(fmt::format("durations measured: A {} commands, B {} (compared in place of their "
                                      "cmd lines' model cycles)",
                                      measured_a.size(), measured_b.size()));
    bool sites_of_a = options.sites && options.sites->program == a.header.program;
    std::size_t i = 0, j = 0;
    while (i < a.records.size() || j < b.records.size()) {
        if (j == b.records.size() || (i < a.records.size() && a.records[i].index < b.records[j].index)) {
            r.only_in_a.push_back(a.records[i++].index);
            continue;
        }
        if (i == a.records.size() || b.records[j].index < a.records[i].index) {
            r.only_in_b.push_back(b.records[j++].index);
            continue;
        }
        auto& ra = a.records[i++];
        auto& rb = b.records[j++];
        ++r.paired;
        compare_shape(ra, rb, r);
        if (r.data_compared && ra.digest && rb.digest && *ra.digest != *rb.digest) {
            if (++r.data_divergent == 1) {
                DataDivergence d{ra.index, ra.unit, ra.opcode, *ra.digest, *rb.digest, std::nullopt};
                if (!ra.data.empty() && !rb.data.empty()) d.element = first_element(ra, rb);
                r.first_data = std::move(d);
            }
        }
        auto d = duration_change(ra, rb, tol, options.waits);
        const auto ma = measured_a.find(ra.index), mb = measured_b.find(rb.index);
        if (ma != measured_a.end()) d.a = ma->second;
        if (mb != measured_b.end()) d.b = mb->second;
        if (ma != measured_a.end() || mb != measured_b.end()) d.over = deviates(d.a, d.b, tol);
        bool moved = d.a != d.b, over = d.over;
        for (auto& w : d.waits) { // its own parts; the waits before its start move with others
            moved = moved || (w.own && *w.a != *w.b);
            over = over || w.over;
        }
        if (moved) ++r.durations_changed;
        if (over) {
            d.phase = r.phases[phases.of_step.at(step_key(ra))].name;
            auto& side = sites_of_a ? ra : rb;
            if (options.sites)
                if (auto* s = options.sites->at(side.pc.value_or(side.index))) d.site = *s;
            r.durations.push_back(std::move(d));
        }
        if (options.start_tol_pct) {
            PositionChange p{ra.index, ra.unit, ra.opcode, ra.start, ra.end, rb.start, rb.end};
            p.start = deviates(ra.start, rb.start, *options.start_tol_pct);
            p.end = deviates(ra.end, rb.end, *options.start_tol_pct);
            if (p.start || p.end) r.positions.push_back(std::move(p));
        }
    }
    std::stable_sort(
        r.durations.begin(), r.durations.end(),
        [](const DurationChange& x, const DurationChange& y) { return x.magnitude() > y.magnitude(); });
    return r;
}

bool DiffReport::agree() const {
    return header.empty() && only_in_a.empty() && only_in_b.empty() && shapes.empty() && !first_data &&
           !data_uncomparable && !total.over && durations.empty() && positions.empty();
}

std::string DiffReport::verdict() const {
    auto tol = pct_text(options.cycles_tol_pct);
    if (agree()) {
        auto s = fmt::format(
            "traces agree: {}, {}, total and durations within {}", plural(paired, "command", "commands"),
            data_compared ? "data bit-exact" : "data not compared (no digests on either side)", tol);
        if (options.start_tol_pct)
            s += fmt::format(", starts and ends within {}", pct_text(*options.start_tol_pct));
        return s;
    }
    std::vector<std::string> parts;
    if (total.over) parts.push_back(fmt::format("total cycles {} (over {})", change(total.a, total.b), tol));
    if (!durations.empty())
        parts.push_back(
            fmt::format("{} with durations over {}", plural(durations.size(), "command", "commands"), tol));
    if (!positions.empty())
        parts.push_back(fmt::format("{} with starts or ends over {}",
                                    plural(positions.size(), "command", "commands"),
                                    pct_text(*options.start_tol_pct)));
    if (first_data)
        parts.push_back(fmt::format("data diverges at command {} ({} in all)", first_data->index,
                                    plural(data_divergent, "command", "commands")));
    if (data_uncomparable) parts.push_back("data not comparable");
    if (!header.empty()) parts.push_back(plural(header.size(), "header mismatch", "header mismatches"));
    if (!only_in_a.empty()) parts.push_back(plural(only_in_a.size(), "command", "commands") + " only in A");
    if (!only_in_b.empty()) parts.push_back(plural(only_in_b.size(), "command", "commands") + " only in B");
    if (!shapes.empty()) parts.push_back(plural(shapes.size(), "shape mismatch", "shape mismatches"));
    std::string out = "traces differ: ";
    for (std::size_t k = 0; k < parts.size(); ++k)
        out += (k ? ", " : "") + parts[k];
    return out;
}

namespace {

/// `+d (+p%)`: B's change from A in cycles and per cent.
std::string delta_text(std::uint64_t a, std::uint64_t b) {
    return fmt::format("{} ({})", signed_delta(a, b), change(a, b));
}

/// `A -> B (+d, +p%)`.
std::string cycles_change(std::uint64_t a, std::uint64_t b) {
    return fmt::format("{} -> {} ({}, {})", a, b, signed_delta(a, b), change(a, b));
}

/// The moved waits of a listed command, `  waits: name A -> B (+d), ...`, or nothing.
std::string moved_waits(const std::vector<WaitChange>& waits) {
    std::string s;
    for (auto& w : waits)
        if (w.a && w.b && *w.a != *w.b)
            s += fmt::format("{}{} {} -> {} ({}){}", s.empty() ? "  waits: " : ", ", w.name, *w.a, *w.b,
                             signed_delta(*w.a, *w.b), w.over ? " over" : "");
    return s;
}

/// The listing's tail: `  ... and N more (--all lists every one)` when some are not shown.
std::string more(std::size_t shown, std::size_t n) {
    return shown < n ? fmt::format("  ... and {} more (--all lists every one)\n", n - shown) : std::string();
}

void units_text(const DiffReport& r, std::string& out) {
    if (r.units.empty()) return;
    std::size_t w = 4;
    for (auto& u : r.units)
        w = std::max(w, u.unit.size());
    out += "units, the largest change in busy cycles first:\n";
    out += fmt::format("  {:<{}} {:>9} {:>10} {:>10} {:>22} {:>12} {:>10} {:>12} {:>10}\n", "unit", w,
                       "commands", "busy A", "busy B", "change", "read A", "change", "written A", "change");
    for (auto& u : r.units) {
        auto commands = u.commands_a == u.commands_b ? std::to_string(u.commands_a)
                                                     : fmt::format("{}->{}", u.commands_a, u.commands_b);
        out += fmt::format("  {:<{}} {:>9} {:>10} {:>10} {:>22} {:>12} {:>10} {:>12} {:>10}\n", u.unit, w,
                           commands, u.busy_a, u.busy_b, delta_text(u.busy_a, u.busy_b), u.read_a,
                           signed_delta(u.read_a, u.read_b), u.written_a,
                           signed_delta(u.written_a, u.written_b));
    }
    bool header = false; // the parts summed per unit, where they moved, after the table
    for (auto& u : r.units)
        if (auto moved = moved_waits(u.waits); !moved.empty()) {
            if (!header) out += "time split per unit, the sums of each part that moved:\n";
            header = true;
            out += fmt::format("  {:<{}}{}\n", u.unit, w, moved);
        }
}

void phases_text(const DiffReport& r, std::string& out) {
    if (r.phases.empty()) return;
    std::size_t w = 5;
    for (auto& p : r.phases)
        w = std::max(w, p.name.size());
    out += "phases, cycles from the previous phase's last end to its own:\n";
    out += fmt::format("  {:<{}} {:>9} {:>10} {:>10} {:>22}\n", "phase", w, "steps", "cycles A", "cycles B",
                       "change");
    for (auto& p : r.phases) {
        auto steps = p.first_step == p.last_step ? std::to_string(p.first_step)
                                                 : fmt::format("{}-{}", p.first_step, p.last_step);
        out += fmt::format("  {:<{}} {:>9} {:>10} {:>10} {:>22}\n", p.name, w, steps, p.cycles_a, p.cycles_b,
                           delta_text(p.cycles_a, p.cycles_b));
    }
}

void durations_text(const DiffReport& r, std::string& out) {
    auto tol = pct_text(r.options.cycles_tol_pct);
    if (r.durations.empty()) {
        out +=
            r.durations_changed == 0
                ? "durations: none changed\n"
                : fmt::format("durations: none over {} ({} of {} within it)\n", tol,
                              plural(r.durations_changed, "command changed", "commands changed"), r.paired);
        return;
    }
    auto shown = r.listed(r.durations.size());
    out += fmt::format("durations over {}: {} of {} paired ({} changed at all)", tol,
                       plural(r.durations.size(), "command", "commands"), r.paired, r.durations_changed);
    out += shown == r.durations.size() ? ":\n" : fmt::format("; the {} largest changes:\n", shown);
    if (shown == 0) {
        out += more(shown, r.durations.size());
        return;
    }
    bool sites = r.options.sites.has_value();
    std::size_t wp = 5, wo = 11;
    for (std::size_t k = 0; k < shown; ++k) {
        wp = std::max(wp, r.durations[k].phase.size());
        wo = std::max(wo, r.durations[k].unit.size() + 1 + r.durations[k].opcode.size());
    }
    out += fmt::format("  {:>8} {:<{}} {:>6}{} {:<{}} {:>11} {:>11} {:>22}\n", "index", "phase", wp, "pc",
                       sites ? fmt::format(" {:<6}", "layer") : "", "unit/opcode", wo, "duration A",
                       "duration B", "change");
    for (std::size_t k = 0; k < shown; ++k) {
        auto& d = r.durations[k];
        out += fmt::format("  {:>8} {:<{}} {:>6}{} {:<{}} {:>11} {:>11} {:>22}", d.index, d.phase, wp,
                           d.pc ? std::to_string(*d.pc) : std::string("-"),
                           sites ? fmt::format(" {:<6}", d.site.layer.empty() ? "-" : d.site.layer) : "",
                           d.unit + "/" + d.opcode, wo, d.a, d.b, delta_text(d.a, d.b));
        if (!d.site.copies.empty()) out += "  copies " + d.site.copies;
        out += moved_waits(d.waits) + "\n";
    }
    out += more(shown, r.durations.size());
}

void positions_text(const DiffReport& r, std::string& out) {
    if (!r.options.start_tol_pct) return;
    auto tol = pct_text(*r.options.start_tol_pct);
    if (r.positions.empty()) {
        out += fmt::format("starts and ends: all within {}\n", tol);
        return;
    }
    auto shown = r.listed(r.positions.size());
    out +=
        fmt::format("starts or ends over {}: {}{}\n", tol, plural(r.positions.size(), "command", "commands"),
                    shown == r.positions.size() ? "" : fmt::format("; the first {}", shown));
    for (std::size_t k = 0; k < shown; ++k) {
        auto& c = r.positions[k];
        std::string s = fmt::format("  {}:", label(c.index, c.unit, c.opcode));
        if (c.start)
            s += fmt::format(" start A {} vs B {} ({})", c.start_a, c.start_b, change(c.start_a, c.start_b));
        if (c.end)
            s += fmt::format("{} end A {} vs B {} ({})", c.start ? "," : "", c.end_a, c.end_b,
                             change(c.end_a, c.end_b));
        out += s + "\n";
    }
    out += more(shown, r.positions.size());
}

} // namespace

std::string to_text(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string out = r.verdict() + "\n";
    out += fmt::format("A: {} ({}), B: {} ({}); durations and the total within {}, {}\n", name_a,
                       plural(r.commands_a, "command", "commands"), name_b,
                       plural(r.commands_b, "command", "commands"), pct_text(r.options.cycles_tol_pct),
                       r.options.start_tol_pct
                           ? fmt::format("starts and ends within {}", pct_text(*r.options.start_tol_pct))
                           : std::string("starts not compared (--start-tol)"));
    auto us = [](std::uint64_t cycles, double mhz) { return static_cast<double>(cycles) / mhz; };
    out += fmt::format("total: {} cycles ({:.3f} -> {:.3f} us), {} {}\n", cycles_change(r.total.a, r.total.b),
                       us(r.total.a, r.clock_mhz_a), us(r.total.b, r.clock_mhz_b),
                       r.total.over ? "over" : "within", pct_text(r.options.cycles_tol_pct));
    units_text(r, out);
    phases_text(r, out);
    out += data_text(r);
    for (auto& h : r.header)
        out += fmt::format("header: {}: A {} vs B {}\n", h.field, h.a, h.b);
    for (auto& c : r.config)
        out += fmt::format("config: {}: A {}{} vs B {}{}\n", c.key, c.a, c.a_default ? " (default)" : "", c.b,
                           c.b_default ? " (default)" : "");
    durations_text(r, out);
    positions_text(r, out);
    if (!r.shapes.empty()) {
        auto shown = r.listed(r.shapes.size());
        if (shown < r.shapes.size())
            out += fmt::format("shape mismatches: {}; the first {}\n", r.shapes.size(), shown);
        for (std::size_t k = 0; k < shown; ++k) {
            auto& s = r.shapes[k];
            out += fmt::format("shape: command {}: {} A {} vs B {}\n", s.index, s.field, s.a, s.b);
        }
        out += more(shown, r.shapes.size());
    }
    if (!r.only_in_a.empty())
        out += fmt::format("only in A: {} ({})\n", ranges(r.only_in_a),
                           plural(r.only_in_a.size(), "command", "commands"));
    if (!r.only_in_b.empty())
        out += fmt::format("only in B: {} ({})\n", ranges(r.only_in_b),
                           plural(r.only_in_b.size(), "command", "commands"));
    for (auto& n : r.notes)
        out += "note: " + n + "\n";
    return out;
}

std::string data_text(const DiffReport& r) {
    std::string out;
    if (r.data_uncomparable) {
        out += fmt::format("data: not compared: {}\n", *r.data_uncomparable);
        return out;
    }
    if (!r.data_compared) {
        out += "data: not compared (no digests on either side)\n";
        return out;
    }
    if (!r.first_data) {
        out += fmt::format("data: bit-exact ({} paired)\n", plural(r.paired, "command", "commands"));
        return out;
    }
    auto& d = *r.first_data;
    out += fmt::format("data: first divergence at {}: digest A {} vs B {}\n",
                       label(d.index, d.unit, d.opcode), hex16(d.digest_a), hex16(d.digest_b));
    if (d.element)
        out += fmt::format("  operand {} element {} ({}): A {} vs B {}\n", d.element->operand,
                           d.element->element, name(d.element->encoding),
                           show_bits(d.element->bits_a, d.element->encoding),
                           show_bits(d.element->bits_b, d.element->encoding));
    else
        out += "  (the element is not named: a side carries no data lines for it)\n";
    if (r.data_divergent > 1)
        out += fmt::format("  {} diverge in data in all\n", plural(r.data_divergent, "command", "commands"));
    return out;
}

} // namespace cardsim::traces
