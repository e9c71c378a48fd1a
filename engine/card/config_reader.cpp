#include "engine/card/config_reader.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace cardsim::card {

std::string Origins::where(std::string_view key) const {
    auto it = where_.find(key);
    return it == where_.end() ? std::string("configs/d5005.toml (built in)") : it->second;
}

std::optional<double> Origins::derived(std::string_view key) const {
    auto it = derived_.find(key);
    if (it == derived_.end()) return std::nullopt;
    return it->second;
}

Reader::Reader(const toml::table& root, std::string_view source, bool complete, Origins& origins)
    : source_(source), complete_(complete), origins_(origins) {
    stack_.push_back({&root, "", {}});
}

std::string Reader::full(std::string_view key) const {
    const std::string& prefix = stack_.back().prefix;
    return prefix.empty() ? std::string(key) : fmt::format("{}.{}", prefix, key);
}

const toml::node* Reader::lookup(std::string_view key) {
    Frame& f = top();
    f.known.emplace_back(key);
    if (!f.table) return nullptr;
    return f.table->get(key);
}

const toml::node* Reader::required(std::string_view key) {
    const toml::node* n = lookup(key);
    if (!n && complete_ && top().table) missing(key);
    return n;
}

const toml::node* Reader::string_node(std::string_view key) {
    const toml::node* n = required(key);
    if (n && !n->is_string()) fail(*n, key, fmt_type(*n) + "; expected a string");
    return n;
}

std::string Reader::where(const toml::node& n) const {
    const auto& src = n.source();
    if (source_.rfind("--set", 0) == 0 || !src.path) return source_;
    return fmt::format("{}:{}", *src.path, src.begin.line);
}

std::string Reader::fmt_type(const toml::node& n) {
    switch (n.type()) {
    case toml::node_type::table:
        return "is a table";
    case toml::node_type::array:
        return "is an array";
    case toml::node_type::string:
        return fmt::format("is a string (\"{}\")", n.as_string()->get());
    case toml::node_type::integer:
        return fmt::format("is an integer ({})", n.as_integer()->get());
    case toml::node_type::floating_point:
        return fmt::format("is a number ({})", n.as_floating_point()->get());
    case toml::node_type::boolean:
        return fmt::format("is a boolean ({})", n.as_boolean()->get());
    default:
        return "is a date or time";
    }
}

void Reader::fail(const toml::node& n, std::string_view key, const std::string& what) const {
    throw Error(fmt::format("{}: `{}` {}", where(n), full(key), what));
}

void Reader::missing(std::string_view key) const {
    throw Error(fmt::format("{}: missing key `{}`", source_, full(key)));
}

void Reader::record(std::string_view key, const toml::node& n) {
    origins_.set(full(key), where(n));
}

std::optional<std::uint64_t> Reader::read_integer(std::string_view key, std::uint64_t lo, std::uint64_t hi,
                                                  std::vector<std::uint64_t> values) {
    const toml::node* n = required(key);
    if (!n) return std::nullopt;
    auto expected = [&] {
        if (values.empty()) return fmt::format("an integer in {}..{}", lo, hi);
        std::string s = "one of";
        for (std::size_t i = 0; i < values.size(); ++i)
            s += fmt::format("{}{}", i ? ", " : " ", values[i]);
        return s;
    };
    if (!n->is_integer()) fail(*n, key, fmt_type(*n) + "; expected " + expected());
    const std::int64_t v = n->as_integer()->get();
    const bool ok =
        v >= 0 &&
        (values.empty()
             ? (static_cast<std::uint64_t>(v) >= lo && static_cast<std::uint64_t>(v) <= hi)
             : std::find(values.begin(), values.end(), static_cast<std::uint64_t>(v)) != values.end());
    if (!ok) fail(*n, key, fmt::format("is {}; expected {}", v, expected()));
    record(key, *n);
    return static_cast<std::uint64_t>(v);
}

void Reader::real(std::string_view key, double& out, double lo, double hi) {
    const toml::node* n = required(key);
    if (!n) return;
    auto expected = fmt::format("a number in {}..{}", lo, hi);
    double v = 0;
    if (n->is_floating_point())
        v = n->as_floating_point()->get();
    else if (n->is_integer())
        v = static_cast<double>(n->as_integer()->get());
    else
        fail(*n, key, fmt_type(*n) + "; expected " + expected);
    if (!(v >= lo && v <= hi)) fail(*n, key, fmt::format("is {}; expected {}", v, expected));
    record(key, *n);
    out = v;
}

void Reader::derived_real(std::string_view key, double lo, double hi) {
    const toml::node* n = lookup(key);
    if (!n) return;
    double v = 0;
    real(key, v, lo, hi);
    origins_.set_derived(full(key), v);
}

void Reader::flag(std::string_view key, bool& out) {
    const toml::node* n = required(key);
    if (!n) return;
    if (!n->is_boolean()) fail(*n, key, fmt_type(*n) + "; expected true or false");
    record(key, *n);
    out = n->as_boolean()->get();
}

void Reader::text(std::string_view key, std::string& out) {
    const toml::node* n = string_node(key);
    if (!n) return;
    record(key, *n);
    out = n->as_string()->get();
}

void Reader::knob(std::string_view key, numerics::EngineNumerics& point) {
    const toml::node* n = string_node(key);
    if (!n) return;
    if (auto err = numerics::set_knob(point, key, n->as_string()->get()))
        fail(*n, key, "is invalid: " + *err);
    record(key, *n);
}

void Reader::group_size(std::string_view key, std::optional<std::uint32_t>& out) {
    const toml::node* n = required(key);
    if (!n) return;
    const std::string expected = "expected \"row\" or a positive integer up to 2^24";
    if (n->is_string()) {
        if (n->as_string()->get() != "row") fail(*n, key, fmt_type(*n) + "; " + expected);
        out.reset();
    } else if (n->is_integer()) {
        std::int64_t v = n->as_integer()->get();
        if (v < 1 || v > (1 << 24)) fail(*n, key, fmt::format("is {}; {}", v, expected));
        out = static_cast<std::uint32_t>(v);
    } else {
        fail(*n, key, fmt_type(*n) + "; " + expected);
    }
    record(key, *n);
}

void Reader::reject_unknown() {
    const Frame& f = top();
    if (!f.table) return;
    for (auto&& [k, v] : *f.table) {
        std::string_view name = k.str();
        if (std::find(f.known.begin(), f.known.end(), name) != f.known.end()) continue;
        std::string expected;
        for (auto& kn : f.known)
            expected += (expected.empty() ? "" : ", ") + kn;
        throw Error(fmt::format("{}: unknown key `{}`; expected one of: {}", where(v), full(name), expected));
    }
}

void Writer::line(std::string_view key, const std::string& value) {
    text_ += prefix_;
    text_ += key;
    text_ += " = ";
    text_ += value;
    text_ += '\n';
}

void Writer::real(std::string_view key, const double& v, double, double) {
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0"; // keep it a TOML float
    line(key, s);
}

void Writer::text(std::string_view key, const std::string& v) {
    std::string s = "\"";
    for (char ch : v) {
        if (ch == '"' || ch == '\\') s += '\\';
        s += ch;
    }
    line(key, s + "\"");
}

void Writer::knob(std::string_view key, const numerics::EngineNumerics& p) {
    std::string_view v = key == "scaling"       ? numerics::name(p.scaling)
                         : key == "activations" ? numerics::name(p.activations)
                         : key == "state"       ? numerics::name(p.state)
                         : key == "cache"       ? numerics::name(p.cache)
                                                : numerics::name(p.attention);
    line(key, fmt::format("\"{}\"", v));
}

void Writer::group_size(std::string_view key, const std::optional<std::uint32_t>& v) {
    line(key, v ? std::to_string(*v) : std::string("\"row\""));
}

} // namespace cardsim::card
