#pragma once
// Schema-checked reading and canonical writing of the card config's TOML. `describe` (in
// config_fields.hpp) lists every key once; the Reader fills a CardConfig from a TOML table with
// it, the Writer prints a CardConfig as canonical TOML with it.

#include "engine/numerics/knob.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cardsim::card {

/// Where each key's value came from ("file:line" or "--set k=v"), for errors about combinations
/// of keys, and the check-only values (tck_ps) that are not kept in the config.
class Origins {
public:
    void set(const std::string& key, std::string where) { where_[key] = std::move(where); }
    /// Where `key` was last set (the built-in default if never).
    std::string where(std::string_view key) const;
    void set_derived(const std::string& key, double value) { derived_[key] = value; }
    std::optional<double> derived(std::string_view key) const;

private:
    std::map<std::string, std::string, std::less<>> where_;
    std::map<std::string, double, std::less<>> derived_;
};

/// Fills config fields from one TOML table (the default, a file, or one --set). In complete mode
/// every key must be present; otherwise absent keys keep their value. Unknown keys, wrong types
/// and out-of-range values are cardsim::Errors naming where, the dotted key and what was expected.
class Reader {
public:
    Reader(const toml::table& root, std::string_view source, bool complete, Origins& origins);

    /// Reads the sub-table `key` with `body` (which reads its keys), then rejects its unknown keys.
    template <class Body>
    void section(std::string_view key, Body&& body) {
        const toml::table* sub = nullptr;
        if (const toml::node* n = lookup(key)) {
            sub = n->as_table();
            if (!sub) fail(*n, key, fmt_type(*n) + "; expected a table");
        } else if (complete_ && top().table) {
            missing(key);
        }
        stack_.push_back({sub, full(key), {}});
        body();
        reject_unknown();
        stack_.pop_back();
    }

    /// An unsigned integer in [lo, hi].
    /// A section of estimates (`[fit]`): read as any section.
    template <class Body>
    void estimates(std::string_view key, Body&& body) {
        section(key, std::forward<Body>(body));
    }
    /// A section of the system of cards (`[system]`, `[link]`): read as any section.
    template <class Body>
    void system(std::string_view key, Body&& body) {
        section(key, std::forward<Body>(body));
    }
    /// A key that moved to `moved_to`: present, it is an error saying where it went.
    void retired(std::string_view key, std::string_view moved_to, std::uint64_t) {
        if (const toml::node* n = lookup(key)) fail(*n, key, fmt::format("has moved to `{}`", moved_to));
    }
    template <class T>
    void integer(std::string_view key, T& out, std::uint64_t lo, std::uint64_t hi) {
        if (auto v = read_integer(key, lo, hi, {})) out = static_cast<T>(*v);
    }
    /// An unsigned integer from a fixed set of values.
    template <class T>
    void one_of(std::string_view key, T& out, std::initializer_list<std::uint64_t> values) {
        if (auto v = read_integer(key, 0, 0, std::vector<std::uint64_t>(values))) out = static_cast<T>(*v);
    }
    /// A floating-point number (an integer is accepted) in [lo, hi].
    void real(std::string_view key, double& out, double lo, double hi);
    /// A check-only number: kept in Origins, not in the config; optional even in complete mode.
    void derived_real(std::string_view key, double lo, double hi);
    void flag(std::string_view key, bool& out);
    /// A flag added after card digests were fixed (Writer::later_flag): read as any flag.
    void later_flag(std::string_view key, bool& out) { flag(key, out); }
    void text(std::string_view key, std::string& out);
    /// A cosmetic string (the name): read like text.
    void label(std::string_view key, std::string& out) { text(key, out); }
    /// One of the spellings in `names`.
    template <class E, std::size_t N>
    void choice(std::string_view key, E& out, const std::array<std::pair<E, std::string_view>, N>& names) {
        const toml::node* n = string_node(key);
        if (!n) return;
        std::string_view s = n->as_string()->get();
        std::string expected;
        for (auto& [e, spelling] : names) {
            if (spelling == s) {
                out = e;
                record(key, *n);
                return;
            }
            expected += expected.empty() ? "" : " | ";
            expected += fmt::format("\"{}\"", spelling);
        }
        fail(*n, key, fmt::format("is \"{}\"; expected one of {}", s, expected));
    }
    /// A numerics knob of `point`, set through numerics::set_knob.
    void knob(std::string_view key, numerics::EngineNumerics& point);
    /// The weights' group size: "row" (none) or a positive integer.
    void group_size(std::string_view key, std::optional<std::uint32_t>& out);

    /// Rejects unknown keys at the top level; call after the last section.
    void finish() { reject_unknown(); }

private:
    struct Frame {
        const toml::table* table; ///< null when the section is absent (nothing to read)
        std::string prefix;       ///< dotted path of the table ("" at the root)
        std::vector<std::string> known;
    };
    Frame& top() { return stack_.back(); }
    std::string full(std::string_view key) const;
    /// The node of `key` in the current table, noting the key as known; null when absent.
    const toml::node* lookup(std::string_view key);
    /// As lookup, and in complete mode a missing key is an error.
    const toml::node* required(std::string_view key);
    const toml::node* string_node(std::string_view key);
    std::optional<std::uint64_t> read_integer(std::string_view key, std::uint64_t lo, std::uint64_t hi,
                                              std::vector<std::uint64_t> values);
    void record(std::string_view key, const toml::node& n);
    void reject_unknown();
    std::string where(const toml::node& n) const;
    static std::string fmt_type(const toml::node& n);
    [[noreturn]] void fail(const toml::node& n, std::string_view key, const std::string& what) const;
    [[noreturn]] void missing(std::string_view key) const;

    std::string source_;
    bool complete_;
    Origins& origins_;
    std::vector<Frame> stack_;
};

/// Prints config fields as canonical TOML: one `dotted.key = value` line per field, in `describe`
/// order; the label (name) and check-only values are left out.
class Writer {
public:
    template <class Body>
    void section(std::string_view key, Body&& body) {
        std::string saved = prefix_;
        prefix_ += std::string(key) + ".";
        body();
        prefix_ = std::move(saved);
    }
    /// A section of estimates (`[fit]`): written unless the writer leaves estimates out (the digest).
    template <class Body>
    void estimates(std::string_view key, Body&& body) {
        if (!for_digest) section(key, std::forward<Body>(body));
    }
    bool with_estimates = true;
    bool omit_absent_router = true; ///< leave the router out of a card without experts (config_fields.hpp)
    /// A section of the system of cards: written unless the writer writes the card's digest text.
    template <class Body>
    void system(std::string_view key, Body&& body) {
        if (!for_digest) section(key, std::forward<Body>(body));
    }
    /// A key that moved: its old line with its old value in the digest text only.
    void retired(std::string_view key, std::string_view, std::uint64_t value) {
        if (for_digest) line(key, std::to_string(value));
    }
    /// Writing the digest's text: no `[fit]`, `[system]` or `[link]`, and the retired lines.
    bool for_digest = false;
    template <class T>
    void integer(std::string_view key, const T& v, std::uint64_t, std::uint64_t) {
        line(key, std::to_string(v));
    }
    template <class T>
    void one_of(std::string_view key, const T& v, std::initializer_list<std::uint64_t>) {
        line(key, std::to_string(v));
    }
    void real(std::string_view key, const double& v, double, double);
    void derived_real(std::string_view, double, double) {}
    void flag(std::string_view key, const bool& v) { line(key, v ? "true" : "false"); }
    /// A capability flag added after card digests were fixed: in the digest's text only when set,
    /// so every card without it keeps the digest it had (and its traces their `config` line).
    void later_flag(std::string_view key, const bool& v) {
        if (!for_digest || v) flag(key, v);
    }
    void text(std::string_view key, const std::string& v);
    void label(std::string_view, const std::string&) {}
    template <class E, std::size_t N>
    void choice(std::string_view key, const E& v,
                const std::array<std::pair<E, std::string_view>, N>& names) {
        for (auto& [e, spelling] : names)
            if (e == v) line(key, fmt::format("\"{}\"", spelling));
    }
    void knob(std::string_view key, const numerics::EngineNumerics& point);
    void group_size(std::string_view key, const std::optional<std::uint32_t>& v);

    /// The canonical text written so far.
    const std::string& str() const { return text_; }

private:
    void line(std::string_view key, const std::string& value);
    std::string prefix_;
    std::string text_;
};

} // namespace cardsim::card
