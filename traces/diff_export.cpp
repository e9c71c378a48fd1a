#include "traces/diff_export.hpp"

#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <limits>

namespace cardsim::traces {
namespace {

namespace json = boost::json;

/// `b - a` as a signed integer (saturated at the int64 range).
std::int64_t delta(std::uint64_t a, std::uint64_t b) {
    constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (b >= a) return static_cast<std::int64_t>(std::min(b - a, max));
    return -static_cast<std::int64_t>(std::min(a - b, max));
}

/// `b` against `a` in per cent, or null when `a` is 0.
json::value pct(std::uint64_t a, std::uint64_t b) {
    if (a == 0) return nullptr;
    return (static_cast<double>(b) - static_cast<double>(a)) * 100.0 / static_cast<double>(a);
}

json::value optional_u64(const std::optional<std::uint64_t>& v) {
    if (v) return *v;
    return nullptr;
}

json::value optional_text(const std::string& s) {
    if (s.empty()) return nullptr;
    return json::string(s);
}

/// An element's bit pattern as the text report spells it (`0x3f800000`), or null when absent.
json::value bits(const std::optional<std::uint32_t>& v, Encoding e) {
    if (!v) return nullptr;
    return json::string(fmt::format("0x{:0{}x}", *v, 2 * element_size(e)));
}

/// `{"a", "b", "delta", "pct"}` of a compared count.
void put_change(json::object& o, std::uint64_t a, std::uint64_t b) {
    o["a"] = a;
    o["b"] = b;
    o["delta"] = delta(a, b);
    o["pct"] = pct(a, b);
}

json::array waits_json(const std::vector<WaitChange>& waits) {
    json::array out;
    for (auto& w : waits) {
        json::object o{{"name", w.name}, {"a", optional_u64(w.a)}, {"b", optional_u64(w.b)}};
        o["delta"] = w.a && w.b ? json::value(delta(*w.a, *w.b)) : json::value(nullptr);
        o["over"] = w.over;
        out.push_back(std::move(o));
    }
    return out;
}

json::object data_json(const DiffReport& r) {
    json::object d{{"compared", r.data_compared}, {"divergent", r.data_divergent}};
    d["uncomparable"] =
        r.data_uncomparable ? json::value(json::string(*r.data_uncomparable)) : json::value(nullptr);
    if (!r.first_data) {
        d["first"] = nullptr;
        return d;
    }
    auto& f = *r.first_data;
    json::object first{{"index", f.index},
                       {"unit", f.unit},
                       {"opcode", f.opcode},
                       {"digest_a", hex16(f.digest_a)},
                       {"digest_b", hex16(f.digest_b)}};
    if (f.element) {
        auto& e = *f.element;
        first["element"] = json::object{{"operand", e.operand},
                                        {"element", e.element},
                                        {"encoding", std::string(name(e.encoding))},
                                        {"bits_a", bits(e.bits_a, e.encoding)},
                                        {"bits_b", bits(e.bits_b, e.encoding)}};
    } else {
        first["element"] = nullptr;
    }
    d["first"] = std::move(first);
    return d;
}

/// One row of the CSV report.
struct Row {
    std::string section{}, item{}, field{}, a{}, b{}, delta{}, pct{}, over{}, unit{}, opcode{}, phase{}, pc{},
        layer{}, detail{};
};

std::string csv_row(const Row& r) {
    std::string out;
    for (auto* f : {&r.section, &r.item, &r.field, &r.a, &r.b, &r.delta, &r.pct, &r.over, &r.unit, &r.opcode,
                    &r.phase, &r.pc, &r.layer, &r.detail}) {
        if (f != &r.section) out += ',';
        out += csv_field(*f);
    }
    out += '\n';
    return out;
}

/// `delta` and `pct` columns of a compared count.
Row counted(std::string section, std::string item, std::string field, std::uint64_t a, std::uint64_t b) {
    Row r{std::move(section), std::move(item), std::move(field), std::to_string(a), std::to_string(b)};
    r.delta = std::to_string(delta(a, b));
    r.pct = a == 0 ? std::string() : fmt::format("{:.4f}", *pct(a, b).if_double());
    return r;
}

std::string flag(bool over) {
    return over ? "1" : "0";
}

} // namespace

json::object diff_json(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    json::object o;
    o["format"] = "cardsim-trace-diff";
    o["version"] = 1;
    o["agree"] = r.agree();
    o["verdict"] = r.verdict();
    o["a"] = json::object{{"name", name_a}, {"commands", r.commands_a}, {"clock_mhz", r.clock_mhz_a}};
    o["b"] = json::object{{"name", name_b}, {"commands", r.commands_b}, {"clock_mhz", r.clock_mhz_b}};
    o["paired"] = r.paired;
    json::object tolerance{{"cycles_pct", r.options.cycles_tol_pct}};
    tolerance["start_pct"] =
        r.options.start_tol_pct ? json::value(*r.options.start_tol_pct) : json::value(nullptr);
    o["tolerance"] = std::move(tolerance);

    json::object total;
    put_change(total, r.total.a, r.total.b);
    total["over"] = r.total.over;
    o["total"] = std::move(total);

    json::array units;
    for (auto& u : r.units) {
        json::object x{{"unit", u.unit},
                       {"commands_a", u.commands_a},
                       {"commands_b", u.commands_b},
                       {"busy_a", u.busy_a},
                       {"busy_b", u.busy_b},
                       {"busy_delta", delta(u.busy_a, u.busy_b)},
                       {"busy_pct", pct(u.busy_a, u.busy_b)},
                       {"read_a", u.read_a},
                       {"read_b", u.read_b},
                       {"written_a", u.written_a},
                       {"written_b", u.written_b}};
        x["waits"] = waits_json(u.waits);
        units.push_back(std::move(x));
    }
    o["units"] = std::move(units);

    json::array phases;
    for (auto& p : r.phases) {
        json::object x{{"name", p.name},
                       {"first_step", p.first_step},
                       {"last_step", p.last_step},
                       {"commands_a", p.commands_a},
                       {"commands_b", p.commands_b}};
        put_change(x, p.cycles_a, p.cycles_b);
        phases.push_back(std::move(x));
    }
    o["phases"] = std::move(phases);
    o["data"] = data_json(r);

    json::array header;
    for (auto& h : r.header)
        header.push_back(json::object{{"field", h.field}, {"a", h.a}, {"b", h.b}});
    o["header"] = std::move(header);
    json::array config;
    for (auto& c : r.config)
        config.push_back(json::object{
            {"key", c.key}, {"a", c.a}, {"b", c.b}, {"a_default", c.a_default}, {"b_default", c.b_default}});
    o["config"] = std::move(config);

    json::array listed;
    for (std::size_t k = 0; k < r.listed(r.durations.size()); ++k) {
        auto& d = r.durations[k];
        json::object x{{"index", d.index},
                       {"pc", optional_u64(d.pc)},
                       {"phase", d.phase},
                       {"unit", d.unit},
                       {"opcode", d.opcode},
                       {"layer", optional_text(d.site.layer)},
                       {"copies", optional_text(d.site.copies)}};
        put_change(x, d.a, d.b);
        x["over"] = d.over;
        x["waits"] = waits_json(d.waits);
        listed.push_back(std::move(x));
    }
    o["durations"] = json::object{
        {"over", r.durations.size()}, {"changed", r.durations_changed}, {"listed", std::move(listed)}};

    if (r.options.start_tol_pct) {
        json::array pos;
        for (std::size_t k = 0; k < r.listed(r.positions.size()); ++k) {
            auto& p = r.positions[k];
            pos.push_back(json::object{{"index", p.index},
                                       {"unit", p.unit},
                                       {"opcode", p.opcode},
                                       {"start_a", p.start_a},
                                       {"start_b", p.start_b},
                                       {"end_a", p.end_a},
                                       {"end_b", p.end_b},
                                       {"start_over", p.start},
                                       {"end_over", p.end}});
        }
        o["positions"] = json::object{{"over", r.positions.size()}, {"listed", std::move(pos)}};
    } else {
        o["positions"] = nullptr;
    }

    json::array shapes;
    for (std::size_t k = 0; k < r.listed(r.shapes.size()); ++k) {
        auto& s = r.shapes[k];
        shapes.push_back(json::object{{"index", s.index}, {"field", s.field}, {"a", s.a}, {"b", s.b}});
    }
    o["shapes"] = json::object{{"count", r.shapes.size()}, {"listed", std::move(shapes)}};
    o["only_in_a"] = json::value_from(r.only_in_a);
    o["only_in_b"] = json::value_from(r.only_in_b);
    o["notes"] = json::value_from(r.notes);
    return o;
}

std::string to_json(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    return json::serialize(diff_json(r, name_a, name_b)) + "\n";
}

std::string to_csv(const DiffReport& r, std::string_view name_a, std::string_view name_b) {
    std::string out = "section,item,field,a,b,delta,pct,over,unit,opcode,phase,pc,layer,detail\n";
    auto add = [&](const Row& row) { out += csv_row(row); };
    Row verdict{"verdict", "", "", std::string(name_a), std::string(name_b)};
    verdict.over = flag(!r.agree());
    verdict.detail = r.verdict();
    add(verdict);
    auto total = counted("total", "", "cycles", r.total.a, r.total.b);
    total.over = flag(r.total.over);
    add(total);
    for (auto& u : r.units) {
        add(counted("unit", u.unit, "busy_cycles", u.busy_a, u.busy_b));
        add(counted("unit", u.unit, "commands", u.commands_a, u.commands_b));
        add(counted("unit", u.unit, "read", u.read_a, u.read_b));
        add(counted("unit", u.unit, "written", u.written_a, u.written_b));
        for (auto& w : u.waits)
            if (w.a && w.b) add(counted("unit", u.unit, "wait." + w.name, *w.a, *w.b));
    }
    for (auto& p : r.phases) {
        auto row = counted("phase", p.name, "cycles", p.cycles_a, p.cycles_b);
        row.detail = p.first_step == p.last_step ? fmt::format("step {}", p.first_step)
                                                 : fmt::format("steps {}-{}", p.first_step, p.last_step);
        add(row);
    }
    Row data{"data", "", "digest"};
    if (r.first_data) {
        auto& f = *r.first_data;
        data.item = std::to_string(f.index);
        data.a = hex16(f.digest_a);
        data.b = hex16(f.digest_b);
        data.over = flag(true);
        data.unit = f.unit;
        data.opcode = f.opcode;
        data.detail = fmt::format("{} commands diverge in data", r.data_divergent);
        add(data);
        if (f.element) {
            auto& e = *f.element;
            Row el{"data", std::to_string(f.index), "element"};
            auto ba = bits(e.bits_a, e.encoding), bb = bits(e.bits_b, e.encoding);
            el.a = ba.is_string() ? std::string(ba.as_string()) : "absent";
            el.b = bb.is_string() ? std::string(bb.as_string()) : "absent";
            el.over = flag(true);
            el.unit = f.unit;
            el.opcode = f.opcode;
            el.detail = fmt::format("operand {} element {} ({})", e.operand, e.element, name(e.encoding));
            add(el);
        }
    } else {
        data.over = flag(r.data_uncomparable.has_value());
        data.detail = r.data_uncomparable ? "not compared: " + *r.data_uncomparable
                      : r.data_compared   ? std::string("bit-exact")
                                          : std::string("not compared (no digests on either side)");
        add(data);
    }
    for (auto& h : r.header)
        add(Row{"header", h.field, "", h.a, h.b, "", "", "1"});
    for (auto& c : r.config) {
        Row row{"config", c.key, "", c.a, c.b};
        row.detail = c.a_default ? "A default" : (c.b_default ? "B default" : "");
        add(row);
    }
    for (std::size_t k = 0; k < r.listed(r.durations.size()); ++k) {
        auto& d = r.durations[k];
        auto fill = [&](Row row, bool over) {
            row.over = flag(over);
            row.unit = d.unit;
            row.opcode = d.opcode;
            row.phase = d.phase;
            row.pc = d.pc ? std::to_string(*d.pc) : "";
            row.layer = d.site.layer;
            row.detail = d.site.copies.empty() ? "" : "copies " + d.site.copies;
            add(row);
        };
        fill(counted("duration", std::to_string(d.index), "duration", d.a, d.b), d.over);
        for (auto& w : d.waits)
            if (w.a && w.b)
                fill(counted("duration", std::to_string(d.index), "wait." + w.name, *w.a, *w.b), w.over);
    }
    for (std::size_t k = 0; k < r.listed(r.positions.size()); ++k) {
        auto& p = r.positions[k];
        auto start = counted("position", std::to_string(p.index), "start", p.start_a, p.start_b);
        auto end = counted("position", std::to_string(p.index), "end", p.end_a, p.end_b);
        start.over = flag(p.start);
        end.over = flag(p.end);
        for (auto* row : {&start, &end}) {
            row->unit = p.unit;
            row->opcode = p.opcode;
            add(*row);
        }
    }
    for (std::size_t k = 0; k < r.listed(r.shapes.size()); ++k) {
        auto& s = r.shapes[k];
        add(Row{"shape", std::to_string(s.index), s.field, s.a, s.b, "", "", "1"});
    }
    for (auto i : r.only_in_a)
        add(Row{"only_in_a", std::to_string(i), "", "", "", "", "", "1"});
    for (auto i : r.only_in_b)
        add(Row{"only_in_b", std::to_string(i), "", "", "", "", "", "1"});
    for (auto& n : r.notes) {
        Row row{"note"};
        row.detail = n;
        add(row);
    }
    return out;
}

std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

} // namespace cardsim::traces
