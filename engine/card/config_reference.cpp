// The card config's reference: the field table walked with a visitor that writes a Markdown table
// per section, documented from the comments of the default config's text.

#include "engine/card/config_reference.hpp"
#include "engine/card/config_fields.hpp"
#include "engine/numerics/knob.hpp"
#include "engine/numerics/knob_spellings.hpp"

#include <fmt/core.h>

#include <map>
#include <optional>
#include <regex>
#include <sstream>

namespace cardsim::card {
namespace {

/// What the comments of a config's text say: each key's own block, the first key of the run a
/// key shares a block with, and the prose blocks of each section.
struct TextDocs {
    std::map<std::string, std::string, std::less<>> own;
    std::map<std::string, std::string, std::less<>> shares;
    std::map<std::string, std::vector<std::string>, std::less<>> prose;
};

/// `s` without leading and trailing blanks.
std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
}

/// A comment block as one paragraph (an empty comment line, `#` alone, is a paragraph break in
/// prose; `-` runs that frame a banner line are left out).
std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (auto l : lines) {
        if (l.starts_with("---") && l.ends_with("---")) { // a banner: a paragraph of its own
            l = trim(l.substr(l.find_first_not_of('-')));
            out += (out.empty() || out.ends_with('\n') ? "" : "\n\n") +
                   trim(l.substr(0, l.find_last_not_of('-') + 1)) + "\n\n";
            continue;
        }
        if (l.empty())
            out += "\n\n";
        else
            out += (out.empty() || out.ends_with('\n') ? "" : " ") + l;
    }
    return out;
}

/// A paragraph as one table cell: breaks become spaces, `|` is escaped.
std::string cell(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '\n') {
            if (!out.empty() && out.back() != ' ') out += ' ';
            continue;
        }
        if (c == '|') out += '\\';
        out += c;
    }
    return out;
}

/// Reads the comment blocks of a config's text: whose key each documents, and the sections' prose.
TextDocs read_docs(std::string_view text) {
    static const std::regex assignment(R"(^([A-Za-z_][A-Za-z0-9_]*)\s*=.*)");
    static const std::regex header(R"(^\[([A-Za-z0-9_.]+)\]\s*(#.*)?$)");
    TextDocs docs;
    std::string section;
    std::vector<std::string> block, pending_prose;
    std::string run_first;
    auto flush_block_as_prose = [&] {
        if (!block.empty()) pending_prose.push_back(join(block));
        block.clear();
    };
    auto attach_prose = [&] {
        for (auto& p : pending_prose)
            docs.prose[section].push_back(p);
        pending_prose.clear();
    };
    auto key_line = [&](const std::string& key) {
        attach_prose();
        const std::string full = section.empty() ? key : section + "." + key;
        if (!block.empty()) {
            docs.own[full] = join(block);
            run_first = full;
            block.clear();
        } else if (!run_first.empty()) {
            docs.shares[full] = run_first;
        }
    };
    std::istringstream in{std::string(text)};
    std::string raw;
    std::smatch m;
    while (std::getline(in, raw)) {
        const std::string line = trim(raw);
        if (line.empty()) {
            flush_block_as_prose();
            run_first.clear();
        } else if (line[0] == '#') {
            const std::string body = trim(std::string_view(line).substr(1));
            if (std::regex_match(body, m, assignment) && !block.empty()) { // a key documented commented out
                key_line(m[1]);
                run_first.clear(); // the keys after it have their own comments
            } else
                block.push_back(body);
        } else if (std::regex_match(line, m, header)) {
            flush_block_as_prose();
            section = m[1];
            attach_prose();
            run_first.clear();
        } else if (std::regex_match(line, m, assignment)) {
            key_line(m[1]);
        }
    }
    return docs;
}

/// A real as the canonical TOML writes it (always with a `.`).
std::string real_text(double v) {
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
}

/// The visitor: one table row per field, a heading per section.
class Reference {
public:
    Reference(const TextDocs& docs, ConfigReference& out) : docs_(docs), out_(out) {}

    template <class Body>
    void section(std::string_view key, Body&& body) {
        const std::size_t saved = prefix_.size();
        if (!prefix_.empty()) prefix_ += '.';
        prefix_.append(key);
        body();
        prefix_.resize(saved);
    }
    template <class Body>
    void estimates(std::string_view key, Body&& body) {
        section(key, std::forward<Body>(body));
    }
    template <class Body>
    void system(std::string_view key, Body&& body) {
        section(key, std::forward<Body>(body));
    }
    /// A key that moved has no row.
    void retired(std::string_view, std::string_view, std::uint64_t) {}
    template <class T>
    void integer(std::string_view key, const T& v, std::uint64_t lo, std::uint64_t hi) {
        row(key, "integer", std::to_string(v), fmt::format("{} .. {}", lo, hi));
    }
    template <class T>
    void one_of(std::string_view key, const T& v, std::initializer_list<std::uint64_t> values) {
        std::string range;
        for (auto x : values)
            range += (range.empty() ? "" : ", ") + std::to_string(x);
        row(key, "integer", std::to_string(v), "one of " + range);
    }
    void real(std::string_view key, const double& v, double lo, double hi) {
        row(key, "real", real_text(v), fmt::format("{} .. {}", lo, hi));
    }
    void derived_real(std::string_view key, double lo, double hi) {
        row(key, "real, optional", "absent (derived)", fmt::format("{} .. {}", lo, hi));
    }
    void flag(std::string_view key, const bool& v) {
        row(key, "boolean", v ? "true" : "false", "true, false");
    }
    void later_flag(std::string_view key, const bool& v) { flag(key, v); }
    void text(std::string_view key, const std::string& v) {
        row(key, "string", fmt::format("\"{}\"", v), "any");
    }
    void label(std::string_view key, const std::string& v) { text(key, v); }
    template <class E, std::size_t N>
    void choice(std::string_view key, const E& v,
                const std::array<std::pair<E, std::string_view>, N>& names) {
        std::string def, range;
        for (auto& [e, spelling] : names) {
            if (e == v) def = fmt::format("\"{}\"", spelling);
            range += fmt::format("{}\"{}\"", range.empty() ? "" : ", ", spelling);
        }
        row(key, "string", def, "one of " + range);
    }
    void knob(std::string_view key, const numerics::EngineNumerics& p) {
        std::string range;
        for (auto s : numerics::knob_spellings(key))
            range += fmt::format("{}\"{}\"", range.empty() ? "" : ", ", s);
        std::string_view v = key == "scaling"       ? numerics::name(p.scaling)
                             : key == "activations" ? numerics::name(p.activations)
                             : key == "state"       ? numerics::name(p.state)
                             : key == "cache"       ? numerics::name(p.cache)
                                                    : numerics::name(p.attention);
        row(key, "string (knob)", fmt::format("\"{}\"", v), "one of " + range);
    }
    void group_size(std::string_view key, const std::optional<std::uint32_t>& v) {
        row(key, "\"row\" or integer", v ? std::to_string(*v) : std::string("\"row\""),
            "\"row\", 1 .. 16777216");
    }

private:
    void row(std::string_view key, std::string_view type, const std::string& def, const std::string& range) {
        if (prefix_ != table_) {
            table_ = prefix_;
            out_.markdown += table_.empty() ? "\n## Top level\n\n" : fmt::format("\n## `[{}]`\n\n", table_);
            if (auto p = docs_.prose.find(table_); p != docs_.prose.end() && !table_.empty())
                for (auto& text : p->second)
                    out_.markdown += text + "\n\n";
            out_.markdown += "| key | type | default | range | documentation |\n|---|---|---|---|---|\n";
        }
        const std::string full = prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
        std::string doc;
        if (auto o = docs_.own.find(full); o != docs_.own.end())
            doc = o->second;
        else if (auto s = docs_.shares.find(full); s != docs_.shares.end())
            doc = fmt::format("(with `{}` above)", s->second.substr(s->second.rfind('.') + 1));
        else
            out_.undocumented.push_back(full);
        out_.markdown +=
            fmt::format("| `{}` | {} | `{}` | {} | {} |\n", full, type, cell(def), cell(range), cell(doc));
    }

    const TextDocs& docs_;
    ConfigReference& out_;
    std::string prefix_;
    std::string table_ = "\x01"; // no table yet
};

} // namespace

ConfigReference config_reference(std::string_view toml_text) {
    const TextDocs docs = read_docs(toml_text);
    ConfigReference out;
    out.markdown =
        "# Card config reference\n\n"
        "<!-- Generated by `cardsim config --reference` from the field table "
        "(engine/card/config_fields.hpp) and the comments of configs/d5005.toml; do not edit. "
        "The test `docs: docs/config.md is what cardsim config --reference prints` fails when it is "
        "stale: regenerate it with `build/cardsim config --reference > docs/config.md`. -->\n\n"
        "Every key of the card config, in the order of `configs/d5005.toml`, with its type, its "
        "default (the D5005), the range the reader accepts and what it means. A `--config FILE` is "
        "merged over these defaults, then each `--set key=value`; `cardsim config` prints the "
        "config a set of options gives. Range and type errors name the file or option, the line "
        "and the key.\n\n";
    if (auto p = docs.prose.find(""); p != docs.prose.end()) {
        out.markdown += "From the header of `configs/d5005.toml`:\n\n";
        for (auto& text : p->second)
            out.markdown += text + "\n";
    }
    const CardConfig config = default_card_config();
    Reference visitor(docs, out);
    describe(visitor, config);
    return out;
}

} // namespace cardsim::card
