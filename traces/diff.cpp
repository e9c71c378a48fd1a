#include "traces/diff.hpp"

#include "engine/error.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <bit>
#include <cmath>
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

/// `b` against `a` in per cent, or `from 0`.
std::string change(std::uint64_t a, std::uint64_t b) {
    if (a == 0) return "from 0";
    double pct = (static_cast<double>(b) - static_cast<double>(a)) * 100.0 / static_cast<double>(a);
    return fmt::format("{:+.2f}%", pct);
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

/// Throws cardsim::Error when the records of `t` are not in strictly increasing index order.
void check_sorted(const Trace& t, std::string_view side) {
    for (std::size_t i = 1; i < t.records.size(); ++i)
        if (t.records[i].index <= t.records[i - 1].index)
            throw Error(
                fmt::format("trace {}: command {} follows command {}, expected strictly increasing indices",
                            side, t.records[i].index, t.records[i - 1].index));
}

/// Adds the header mismatches and notes of `a` against `b` to `r`.
void compare_header(const Header& a, const Header& b, DiffReport& r) {
    auto field = [&](std::string name, std::string va, std::string vb) {
        if (va != vb) r.header.push_back({std::move(name), std::move(va), std::move(vb)});
    };
    field("program", hex16(a.program), hex16(b.program));
    field("config", hex16(a.config), hex16(b.config));
    field("knob", numerics::to_string(a.knob), numerics::to_string(b.knob));
    field("clock_mhz", format_clock(a.clock_mhz).value_or("?"), format_clock(b.clock_mhz).value_or("?"));
    field("ddr_channels", channels(a.ddr_channels), channels(b.ddr_channels));
    if (a.mode != b.mode) r.notes.push_back(fmt::format("mode: A {}, B {}", name(a.mode), name(b.mode)));
    std::set<std::string> keys;
    for (auto& [k, v] : a.meta)
        keys.insert(k);
    for (auto& [k, v] : b.meta)
        keys.insert(k);
    for (auto& k : keys) {
        auto ia = a.meta.find(k), ib = b.meta.find(k);
        auto show = [](auto it, auto& m) {
            return it == m.end() ? std::string("absent") : fmt::format("`{}`", escape(it->second));
        };
        if (ia == a.meta.end() || ib == b.meta.end() || ia->second != ib->second)
            r.notes.push_back(fmt::format("meta {}: A {}, B {}", k, show(ia, a.meta), show(ib, b.meta)));
    }
}

/// Adds the shape mismatches of the paired records to `r`.
void compare_shape(const Record& a, const Record& b, DiffReport& r) {
    auto field = [&](std::string name, std::string va, std::string vb) {
        if (va != vb) r.shapes.push_back({a.index, std::move(name), std::move(va), std::move(vb)});
    };
    field("unit", a.unit, b.unit);
    field("opcode", a.opcode, b.opcode);
    field("read", std::to_string(a.read), std::to_string(b.read));
    field("written", std::to_string(a.written), std::to_string(b.written));
    if (a.pc && b.pc) field("pc", std::to_string(*a.pc), std::to_string(*b.pc));
    if (!a.ddr.empty() && !b.ddr.empty())
        for (std::size_t c = 0; c < std::min(a.ddr.size(), b.ddr.size()); ++c) {
            field(fmt::format("ddr[{}].read", c), std::to_string(a.ddr[c].read),
                  std::to_string(b.ddr[c].read));
            field(fmt::format("ddr[{}].written", c), std::to_string(a.ddr[c].written),
                  std::to_string(b.ddr[c].written));
        }
}

} // namespace

bool deviates(std::uint64_t a, std::uint64_t b, double pct) {
    auto d = static_cast<long double>(a > b ? a - b : b - a);
    return d * 100.0L > static_cast<long double>(pct) * static_cast<long double>(a);
}

DiffReport diff(const Trace& a, const Trace& b, double tol) {
    if (!std::isfinite(tol) || tol < 0)
        throw Error(
            fmt::format("the cycle tolerance is {}%, expected a non-negative number of per cent", tol));
    check_sorted(a, "A");
    check_sorted(b, "B");
    DiffReport r;
    r.cycles_tol_pct = tol;
    r.commands_a = a.records.size();
    r.commands_b = b.records.size();
    compare_header(a.header, b.header, r);

    bool digests_a = a.header.mode != Mode::TimingOnly, digests_b = b.header.mode != Mode::TimingOnly;
    r.data_compared = digests_a && digests_b;
    if (digests_a != digests_b)
        r.data_uncomparable =
            fmt::format("{} is timing-only (no digests), {} is {}", digests_a ? "B" : "A",
                        digests_a ? "A" : "B", name(digests_a ? a.header.mode : b.header.mode));

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
        CycleDeviation c{ra.index, ra.unit, ra.opcode, ra.start, ra.end, rb.start, rb.end};
        c.start = deviates(ra.start, rb.start, tol);
        c.end = deviates(ra.end, rb.end, tol);
        c.duration = deviates(ra.duration(), rb.duration(), tol);
        if (c.start || c.end || c.duration) r.cycles.push_back(std::move(c));
    }
    return r;
}

bool DiffReport::agree() const {
    return header.empty() && only_in_a.empty() && only_in_b.empty() && shapes.empty() && !first_data &&
           !data_uncomparable && cycles.empty();
}

std::string DiffReport::verdict() const {
    auto tol = fmt::format("{}%", cycles_tol_pct);
    if (agree())
        return fmt::format("traces agree: {}, {}, cycles within {}", plural(paired, "command", "commands"),
                           data_compared ? "data bit-exact" : "data not compared (no digests on either side)",
                           tol);
    std::vector<std::string> parts;
    if (!header.empty()) parts.push_back(plural(header.size(), "header mismatch", "header mismatches"));
    if (!only_in_a.empty()) parts.push_back(plural(only_in_a.size(), "command", "commands") + " only in A");
    if (!only_in_b.empty()) parts.push_back(plural(only_in_b.size(), "command", "commands") + " only in B");
    if (!shapes.empty()) parts.push_back(plural(shapes.size(), "shape mismatch", "shape mismatches"));
    if (first_data)
        parts.push_back(fmt::format("data diverges at command {} ({} in all)", first_data->index,
                                    plural(data_divergent, "command", "commands")));
    if (data_uncomparable) parts.push_back("data not comparable");
    if (!cycles.empty())
        parts.push_back(
            fmt::format("{} with cycles over {}", plural(cycles.size(), "command", "commands"), tol));
    std::string out = "traces differ: ";
    for (std::size_t k = 0; k < parts.size(); ++k)
        out += (k ? ", " : "") + parts[k];
    return out;
}

std::string to_text(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string out;
    auto line = [&](const std::string& s) { out += s + "\n"; };
    line(fmt::format("A: {} ({}), B: {} ({}), cycle tolerance {}%", name_a,
                     plural(r.commands_a, "command", "commands"), name_b,
                     plural(r.commands_b, "command", "commands"), r.cycles_tol_pct));
    if (r.first_data) {
        auto& d = *r.first_data;
        line(fmt::format("first data divergence: {}: digest A {} vs B {}", label(d.index, d.unit, d.opcode),
                         hex16(d.digest_a), hex16(d.digest_b)));
        if (d.element)
            line(fmt::format("  operand {} element {} ({}): A {} vs B {}", d.element->operand,
                             d.element->element, name(d.element->encoding),
                             show_bits(d.element->bits_a, d.element->encoding),
                             show_bits(d.element->bits_b, d.element->encoding)));
        else
            line("  (the element is not named: a side carries no data lines for it)");
        if (r.data_divergent > 1)
            line(fmt::format("  {} diverge in data in all", plural(r.data_divergent, "command", "commands")));
    }
    if (r.data_uncomparable) line(fmt::format("data not compared: {}", *r.data_uncomparable));
    for (auto& c : r.cycles) {
        std::vector<std::string> parts;
        if (c.start)
            parts.push_back(
                fmt::format("start A {} vs B {} ({})", c.start_a, c.start_b, change(c.start_a, c.start_b)));
        if (c.end)
            parts.push_back(fmt::format("end A {} vs B {} ({})", c.end_a, c.end_b, change(c.end_a, c.end_b)));
        if (c.duration) {
            auto da = c.end_a - c.start_a, db = c.end_b - c.start_b;
            parts.push_back(fmt::format("duration A {} vs B {} ({})", da, db, change(da, db)));
        }
        std::string s =
            fmt::format("cycles over {}%: {}:", r.cycles_tol_pct, label(c.index, c.unit, c.opcode));
        for (std::size_t k = 0; k < parts.size(); ++k)
            s += (k ? ", " : " ") + parts[k];
        line(s);
    }
    for (auto& s : r.shapes)
        line(fmt::format("shape: command {}: {} A {} vs B {}", s.index, s.field, s.a, s.b));
    if (!r.only_in_a.empty())
        line(fmt::format("only in A: {} ({})", ranges(r.only_in_a),
                         plural(r.only_in_a.size(), "command", "commands")));
    if (!r.only_in_b.empty())
        line(fmt::format("only in B: {} ({})", ranges(r.only_in_b),
                         plural(r.only_in_b.size(), "command", "commands")));
    for (auto& h : r.header)
        line(fmt::format("header: {}: A {} vs B {}", h.field, h.a, h.b));
    for (auto& n : r.notes)
        line("note: " + n);
    line(r.verdict());
    return out;
}

} // namespace cardsim::traces
