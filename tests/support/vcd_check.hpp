#pragma once
// A strict reader of the VCD files cardsim writes, for tests: it checks the structure a waveform
// viewer relies on and gives each variable's value changes, so a test can compare them with the
// trace they came from.

#include <cstdint>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cardsim::test {

/// One declared variable: its dotted path (`card.matvec.busy`), its width, and its value at every
/// time it changes (time 0 from `$dumpvars` first).
struct VcdVar {
    std::string path;
    unsigned width = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> changes; ///< (time, value)
};

/// A parsed VCD: its timescale text and its variables by path.
struct Vcd {
    std::string timescale;
    std::map<std::string, VcdVar> vars;
    std::uint64_t last_time = 0;
};

/// Parses `text`; throws std::runtime_error naming what breaks the format: a section without
/// `$end`, `$scope` / `$upscope` unbalanced, a variable that is not `wire` or `integer`, an
/// identifier declared twice or changed without a declaration, a value that does not fit its
/// width, a variable missing from `$dumpvars`, times not strictly increasing.
inline Vcd parse_vcd(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> tokens;
    for (std::string w; in >> w;)
        tokens.push_back(w);
    Vcd vcd;
    std::map<std::string, std::string> path_of; // identifier -> path
    std::vector<std::string> scope;
    std::size_t i = 0;
    auto fail = [&](const std::string& why) {
        throw std::runtime_error("VCD: " + why + " (token " + std::to_string(i) + ")");
    };
    auto upto_end = [&]() {
        std::vector<std::string> body;
        for (++i; i < tokens.size() && tokens[i] != "$end"; ++i)
            body.push_back(tokens[i]);
        if (i == tokens.size()) fail("a section without $end");
        ++i;
        return body;
    };
    bool defined = false, timescale = false;
    while (!defined) {
        if (i >= tokens.size()) fail("no $enddefinitions");
        const auto kw = tokens[i];
        auto body = upto_end();
        if (kw == "$timescale") {
            for (auto& b : body)
                vcd.timescale += b;
            timescale = true;
        } else if (kw == "$scope") {
            if (body.size() != 2 || body[0] != "module") fail("expected `$scope module NAME $end`");
            scope.push_back(body[1]);
        } else if (kw == "$upscope") {
            if (scope.empty()) fail("$upscope without a scope");
            scope.pop_back();
        } else if (kw == "$var") {
            if (body.size() != 4) fail("expected `$var TYPE WIDTH ID NAME $end`");
            if (body[0] != "wire" && body[0] != "integer") fail("a variable of type " + body[0]);
            if (scope.empty()) fail("a variable outside every scope");
            std::string path;
            for (auto& s : scope)
                path += s + ".";
            path += body[3];
            if (path_of.count(body[2])) fail("identifier " + body[2] + " declared twice");
            if (vcd.vars.count(path)) fail("variable " + path + " declared twice");
            path_of[body[2]] = path;
            vcd.vars[path] = VcdVar{path, static_cast<unsigned>(std::stoul(body[1])), {}};
        } else if (kw == "$enddefinitions") {
            defined = true;
        } else if (kw != "$version" && kw != "$date" && kw != "$comment") {
            fail("unknown section " + kw);
        }
    }
    if (!scope.empty()) fail("scopes left open at $enddefinitions");
    if (!timescale) fail("no $timescale");
    bool any_time = false, dumped = false;
    std::uint64_t now = 0;
    auto set = [&](const std::string& id, std::uint64_t value) {
        auto p = path_of.find(id);
        if (p == path_of.end()) fail("a change of undeclared identifier " + id);
        auto& v = vcd.vars[p->second];
        if (v.width < 64 && value >> v.width) fail("a value wider than " + p->second);
        if (!v.changes.empty() && v.changes.back().first == now)
            fail("two changes of " + p->second + " at once");
        v.changes.emplace_back(now, value);
    };
    while (i < tokens.size()) {
        const auto& t = tokens[i];
        if (t[0] == '#') {
            auto time = std::stoull(t.substr(1));
            if (any_time && time <= now) fail("time " + t + " not after " + std::to_string(now));
            now = time, any_time = true;
            ++i;
        } else if (t == "$dumpvars") {
            if (!any_time || now != 0 || dumped) fail("$dumpvars not once at #0");
            dumped = true;
            ++i;
        } else if (t == "$end") {
            ++i;
        } else if (t[0] == '0' || t[0] == '1') {
            set(t.substr(1), t[0] == '1');
            ++i;
        } else if (t[0] == 'b') {
            if (i + 1 >= tokens.size()) fail("a vector value without an identifier");
            std::uint64_t value = 0;
            for (char c : t.substr(1)) {
                if (c != '0' && c != '1') fail("a vector value of " + t);
                value = value * 2 + static_cast<std::uint64_t>(c - '0');
            }
            set(tokens[i + 1], value);
            i += 2;
        } else {
            fail("unexpected " + t);
        }
    }
    if (!dumped) fail("no $dumpvars");
    for (auto& [path, v] : vcd.vars)
        if (v.changes.empty() || v.changes.front().first != 0) fail(path + " has no value at time 0");
    vcd.last_time = now;
    return vcd;
}

/// The intervals [from, to) in which a 1-bit variable is 1 (one still 1 at the end runs to `end`).
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> high_intervals(const VcdVar& v,
                                                                           std::uint64_t end) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    bool high = false;
    std::uint64_t from = 0;
    for (auto [t, value] : v.changes) {
        if (value && !high) from = t, high = true;
        if (!value && high) out.emplace_back(from, t), high = false;
    }
    if (high) out.emplace_back(from, end);
    return out;
}

} // namespace cardsim::test
