#pragma once
// A strict well-formedness check of an HTML page, for the report tests: stricter than HTML5 (every
// non-void element closed, in order; attribute values quoted), so a page that passes parses the
// same in any HTML parser. And the check that a page loads nothing from elsewhere.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::test {

/// The problems of `page` as HTML, each `at byte N: what` (empty when it is well formed): a
/// doctype first; tags, attributes (names, quoted values, no repeats) and character references
/// well formed; `<script>` and `<style>` closed; every element closed in order, except void
/// elements (and `/>` only on void elements or inside <svg>); one html, head and body; ids unique.
inline std::vector<std::string> html_problems(std::string_view page) {
    std::vector<std::string> out;
    auto fail = [&](std::size_t at, const std::string& what) {
        if (out.size() < 20) out.push_back("at byte " + std::to_string(at) + ": " + what);
    };
    static const std::set<std::string> voids{"area",  "base", "br",   "col",    "embed", "hr", "img",
                                             "input", "link", "meta", "source", "track", "wbr"};
    static const std::set<std::string> entities{"amp", "lt", "gt", "quot", "apos", "nbsp"};
    const std::string_view doctype = "<!DOCTYPE html>";
    if (page.substr(0, doctype.size()) != doctype) fail(0, "the page does not start with <!DOCTYPE html>");
    std::vector<std::string> open;
    std::set<std::string> ids;
    std::size_t html = 0, head = 0, body = 0;
    auto name_char = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':';
    };
    auto check_text = [&](std::size_t from, std::size_t to) { // character references in text
        for (std::size_t i = from; i < to; ++i) {
            if (page[i] == '>') fail(i, "a bare `>` in text");
            if (page[i] != '&') continue;
            auto semi = page.find(';', i);
            if (semi == std::string_view::npos || semi > to || semi - i > 10) {
                fail(i, "a bare `&` (not a character reference)");
                continue;
            }
            auto ref = std::string(page.substr(i + 1, semi - i - 1));
            bool numeric = ref.size() > 1 && ref[0] == '#' &&
                           std::all_of(ref.begin() + 1, ref.end(),
                                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
            if (!numeric && !entities.count(ref)) fail(i, "an unknown character reference &" + ref + ";");
        }
    };
    std::size_t i = doctype.size();
    while (i < page.size()) {
        auto lt = page.find('<', i);
        if (lt == std::string_view::npos) lt = page.size();
        check_text(i, lt);
        if (lt == page.size()) break;
        if (page.substr(lt, 4) == "<!--") {
            auto end = page.find("-->", lt + 4);
            if (end == std::string_view::npos) {
                fail(lt, "an unclosed comment");
                break;
            }
            i = end + 3;
            continue;
        }
        const bool closing = lt + 1 < page.size() && page[lt + 1] == '/';
        std::size_t p = lt + (closing ? 2 : 1);
        std::string name;
        while (p < page.size() && name_char(page[p]))
            name += char(std::tolower(static_cast<unsigned char>(page[p++])));
        if (name.empty()) {
            fail(lt, "a `<` that starts no tag");
            i = lt + 1;
            continue;
        }
        if (closing) {
            while (p < page.size() && page[p] == ' ')
                ++p;
            if (p >= page.size() || page[p] != '>') fail(p, "a malformed end tag </" + name);
            if (open.empty() || open.back() != name)
                fail(lt, "</" + name + "> closes " +
                             (open.empty() ? std::string("nothing") : "<" + open.back() + ">"));
            else
                open.pop_back();
            i = p + 1;
            continue;
        }
        // Attributes.
        std::set<std::string> seen;
        bool self_closing = false;
        for (;;) {
            while (p < page.size() && std::isspace(static_cast<unsigned char>(page[p])))
                ++p;
            if (p >= page.size()) {
                fail(lt, "an unterminated <" + name + ">");
                return out;
            }
            if (page[p] == '>') break;
            if (page.substr(p, 2) == "/>") {
                self_closing = true;
                ++p;
                break;
            }
            std::string attr;
            while (p < page.size() && name_char(page[p]))
                attr += char(std::tolower(static_cast<unsigned char>(page[p++])));
            if (attr.empty()) {
                fail(p, "a malformed attribute in <" + name + ">");
                return out;
            }
            if (!seen.insert(attr).second) fail(p, "attribute " + attr + " repeated in <" + name + ">");
            if (p < page.size() && page[p] == '=') {
                ++p;
                if (p >= page.size() || (page[p] != '"' && page[p] != '\'')) {
                    fail(p, "an unquoted value of " + attr + " in <" + name + ">");
                    return out;
                }
                const char q = page[p];
                auto end = page.find(q, p + 1);
                if (end == std::string_view::npos) {
                    fail(p, "an unterminated value of " + attr);
                    return out;
                }
                check_text(p + 1, end);
                if (page.substr(p + 1, end - p - 1).find('<') != std::string_view::npos)
                    fail(p, "a `<` in the value of " + attr);
                if (attr == "id" && !ids.insert(std::string(page.substr(p + 1, end - p - 1))).second)
                    fail(p, "id " + std::string(page.substr(p + 1, end - p - 1)) + " used twice");
                p = end + 1;
            }
        }
        i = p + 1;
        const bool in_svg = std::find(open.begin(), open.end(), "svg") != open.end() || name == "svg";
        if (self_closing && !voids.count(name) && !in_svg) fail(lt, "<" + name + "/> outside SVG");
        html += name == "html", head += name == "head", body += name == "body";
        if (name == "script" || name == "style") {
            auto end = page.find("</" + name, i);
            if (end == std::string_view::npos) {
                fail(lt, "an unclosed <" + name + ">");
                return out;
            }
            auto close = page.find('>', end);
            i = close == std::string_view::npos ? page.size() : close + 1;
            continue;
        }
        if (!voids.count(name) && !self_closing) open.push_back(name);
    }
    for (auto& o : open)
        fail(page.size(), "<" + o + "> is never closed");
    if (html != 1 || head != 1 || body != 1) fail(0, "the page needs one <html>, one <head> and one <body>");
    return out;
}

/// What in `page` would load something from elsewhere or name a URL: `http:`, `https:`, `ftp:`,
/// `<link`, `@import`, `url(`, any `src` attribute, and an `href` that is not a fragment or a
/// relative path (a scheme's `:` or a protocol-relative `//`).
inline std::vector<std::string> external_references(std::string_view page) {
    std::vector<std::string> out;
    auto report = [&](std::string_view what, std::size_t at) {
        out.push_back(std::string(what) + " at byte " + std::to_string(at) + ": " +
                      std::string(page.substr(at > 40 ? at - 40 : 0, 100)));
    };
    for (std::string_view bad :
         {"http:", "https:", "ftp:", "<link", "@import", "url(", " src=\"", " src='"}) {
        auto at = page.find(bad);
        if (at != std::string_view::npos) report(bad, at);
    }
    for (auto at = page.find(" href=\""); at != std::string_view::npos; at = page.find(" href=\"", at + 1)) {
        auto from = at + 7, to = page.find('"', from);
        auto target = page.substr(from, to - from);
        if (target.find(':') != std::string_view::npos || target.substr(0, 2) == "//") report("href", at);
    }
    return out;
}

/// The visible text of `page`: tags, scripts and styles removed, character references decoded,
/// runs of white space as one space.
inline std::string visible_text(std::string_view page) {
    std::string text;
    for (std::size_t i = 0; i < page.size();) {
        if (page[i] == '<') {
            for (std::string_view raw : {"<script", "<style"})
                if (page.substr(i, raw.size()) == raw) {
                    auto end = page.find("</" + std::string(raw.substr(1)), i);
                    i = end == std::string_view::npos ? page.size() : end;
                }
            auto close = page.find('>', i);
            i = close == std::string_view::npos ? page.size() : close + 1;
            if (text.empty() || text.back() != ' ') text += ' ';
            continue;
        }
        if (page[i] == '&') {
            auto semi = page.find(';', i);
            auto ref = page.substr(i + 1, semi - i - 1);
            text += ref == "amp"    ? "&"
                    : ref == "lt"   ? "<"
                    : ref == "gt"   ? ">"
                    : ref == "quot" ? "\""
                    : ref == "#39"  ? "'"
                                    : " ";
            i = semi + 1;
            continue;
        }
        char c = page[i++];
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (text.empty() || text.back() != ' ') text += ' ';
        } else {
            text += c;
        }
    }
    return text;
}

/// Checks (Catch2) that `page` is well-formed HTML (`html_problems`) that names no URL
/// (`external_references`), listing what it finds.
inline void check_self_contained(std::string_view page) {
    REQUIRE_FALSE(page.empty());
    auto problems = html_problems(page);
    for (auto& p : problems)
        UNSCOPED_INFO(p);
    CHECK(problems.empty());
    auto external = external_references(page);
    for (auto& e : external)
        UNSCOPED_INFO(e);
    CHECK(external.empty());
}

} // namespace cardsim::test
