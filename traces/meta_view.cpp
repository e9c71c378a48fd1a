#include "traces/meta_view.hpp"

#include "traces/lexical.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <vector>

namespace cardsim::traces {
namespace {

namespace json = boost::json;

/// How many bytes of a line a difference quotes.
constexpr std::size_t quoted_bytes = 60;
/// How many member names a difference lists.
constexpr std::size_t listed_members = 6;

/// `value` as JSON when it is an object or an array that parses whole; else nothing.
std::optional<json::value> as_json(std::string_view value) {
    if (value.empty() || (value.front() != '{' && value.front() != '[')) return std::nullopt;
    boost::system::error_code ec;
    auto v = json::parse(value, ec);
    if (ec) return std::nullopt;
    return v;
}

/// The lines of `text` (a final LF ends the last line, it does not start another).
std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t at = 0;
    while (at < text.size()) {
        auto nl = text.find('\n', at);
        if (nl == std::string_view::npos) nl = text.size();
        out.push_back(text.substr(at, nl - at));
        at = nl + 1;
    }
    return out;
}

/// `text` escaped, cut to quoted_bytes with `...` after.
std::string quote(std::string_view text) {
    auto e = escape(text.substr(0, quoted_bytes));
    return fmt::format("`{}{}`", e, text.size() > quoted_bytes ? "..." : "");
}

/// `line` escaped as meta_whole shows it: tabs kept.
std::string readable(std::string_view line) {
    std::string out;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= line.size(); ++i)
        if (i == line.size() || line[i] == '\t') {
            out += escape(line.substr(from, i - from));
            if (i < line.size()) out += '\t';
            from = i + 1;
        }
    return out;
}

/// Appends `v` laid out from column `indent` (its first line already indented): on one line when
/// it fits meta_layout_width columns, else one member or item a line.
void lay_out(const json::value& v, const std::string& indent, std::string& out) {
    auto compact = json::serialize(v);
    const bool scalars_only =
        v.is_array() && std::none_of(v.as_array().begin(), v.as_array().end(),
                                     [](auto& x) { return x.is_object() || x.is_array(); });
    if ((!v.is_object() && !v.is_array()) || scalars_only ||
        indent.size() + compact.size() <= meta_layout_width) {
        out += escape(compact);
        return;
    }
    const std::string inner = indent + "  ";
    if (v.is_object()) {
        auto& o = v.as_object();
        out += "{\n";
        std::size_t k = 0;
        for (auto& [key, x] : o) {
            out += inner + escape(json::serialize(json::value(key))) + ": ";
            lay_out(x, inner, out);
            out += ++k < o.size() ? ",\n" : "\n";
        }
        out += indent + "}";
        return;
    }
    auto& a = v.as_array();
    out += "[\n";
    for (std::size_t k = 0; k < a.size(); ++k) {
        out += inner;
        lay_out(a[k], inner, out);
        out += k + 1 < a.size() ? ",\n" : "\n";
    }
    out += indent + "]";
}

} // namespace

bool meta_is_short(std::string_view value) {
    return value.size() <= meta_inline_limit &&
           std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

std::string meta_brief(std::string_view value) {
    if (meta_is_short(value)) return fmt::format("`{}`", escape(value));
    if (auto j = as_json(value)) {
        if (j->is_object())
            return fmt::format("a JSON object of {} members, {} bytes", j->as_object().size(), value.size());
        return fmt::format("a JSON array of {} items, {} bytes", j->as_array().size(), value.size());
    }
    if (auto lines = lines_of(value); lines.size() > 1)
        return fmt::format("{} lines, {} bytes", lines.size(), value.size());
    return fmt::format("{} bytes, starting {}", value.size(), quote(value));
}

std::string meta_whole(std::string_view value, std::string_view indent) {
    std::string out;
    if (auto j = as_json(value)) {
        out += indent;
        lay_out(*j, std::string(indent), out);
        return out + "\n";
    }
    for (auto line : lines_of(value))
        out += fmt::format("{}{}\n", indent, readable(line));
    return out;
}

std::string meta_difference(std::optional<std::string_view> a, std::optional<std::string_view> b) {
    auto brief = [](std::optional<std::string_view> v) { return v ? meta_brief(*v) : std::string("absent"); };
    if (!a || !b || (meta_is_short(*a) && meta_is_short(*b)))
        return fmt::format("A {}, B {}", brief(a), brief(b));
    auto ja = as_json(*a), jb = as_json(*b);
    if (ja && jb && ja->is_object() && jb->is_object()) {
        auto &oa = ja->as_object(), &ob = jb->as_object();
        std::set<std::string> keys;
        for (auto& m : oa)
            keys.insert(std::string(m.key()));
        for (auto& m : ob)
            keys.insert(std::string(m.key()));
        std::vector<std::string> differ;
        for (auto& k : keys) {
            auto *x = oa.if_contains(k), *y = ob.if_contains(k);
            if (!x || !y || *x != *y) differ.push_back(k);
        }
        if (differ.empty())
            return fmt::format("the same JSON object, spelled differently ({} and {} bytes)", a->size(),
                               b->size());
        std::string names;
        for (std::size_t k = 0; k < differ.size() && k < listed_members; ++k)
            names += (k ? ", " : "") + differ[k];
        if (differ.size() > listed_members) names += ", ...";
        return fmt::format("member{} {} differ{} ({} of {})", differ.size() == 1 ? "" : "s", names,
                           differ.size() == 1 ? "s" : "", differ.size(), keys.size());
    }
    auto la = lines_of(*a), lb = lines_of(*b);
    if (!ja && !jb && (la.size() > 1 || lb.size() > 1)) {
        const auto n = std::max(la.size(), lb.size());
        std::size_t differ = 0, first = n;
        for (std::size_t k = 0; k < n; ++k) {
            auto x = k < la.size() ? std::optional(la[k]) : std::nullopt;
            auto y = k < lb.size() ? std::optional(lb[k]) : std::nullopt;
            if (x == y) continue;
            ++differ;
            first = std::min(first, k);
        }
        auto line = [](auto& l, std::size_t k) { return k < l.size() ? quote(l[k]) : std::string("none"); };
        if (differ == 0) return "the same lines"; // only a final line break differs
        return fmt::format("{} of {} lines differ; the first, line {}: A {}, B {}", differ, n, first + 1,
                           line(la, first), line(lb, first));
    }
    return fmt::format("A {}, B {}", brief(a), brief(b));
}

} // namespace cardsim::traces
