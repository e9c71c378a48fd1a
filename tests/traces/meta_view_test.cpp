// How a person reads meta values: short ones as they are, long ones summarised or laid out, and
// differences of long ones in one short line.

#include "tests/traces/fixtures.hpp"
#include "traces/diff.hpp"
#include "traces/meta_view.hpp"
#include "traces/summary.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/core.h>

using namespace cardsim::traces;
using namespace cardsim::traces::testing;

namespace {

/// A card-like TOML text of `n` lines, line `changed` (if any) with another value.
std::string toml(std::size_t n, std::size_t changed = std::size_t(-1)) {
    std::string s;
    for (std::size_t k = 0; k < n; ++k)
        s += "key" + std::to_string(k) + " = " + std::to_string(k == changed ? 999 : k) + "\n";
    return s;
}

/// A run-summary-like JSON object with `cycles`.
std::string summary_json(int cycles) {
    boost::json::object o;
    o["cycles"] = cycles;
    o["prompt"] = boost::json::array{1, 17, 42, 7};
    o["model"] = "dense decoder (qwen3)";
    boost::json::array channels;
    for (int c = 0; c < 4; ++c)
        channels.push_back(boost::json::object{
            {"read_bytes", 1000 * c}, {"write_bytes", 10 * c}, {"row_hits", 100 + c}, {"row_misses", c}});
    o["channels"] = channels;
    return boost::json::serialize(o);
}

/// The number of `\x0a` escapes in `s`.
std::size_t escaped_line_breaks(const std::string& s) {
    std::size_t n = 0;
    for (auto at = s.find("\\x0a"); at != std::string::npos; at = s.find("\\x0a", at + 1))
        ++n;
    return n;
}

} // namespace

TEST_CASE("a short meta value reads as it is, a long one by its shape and size", "[traces][meta]") {
    CHECK(meta_is_short("cardsim"));
    CHECK_FALSE(meta_is_short("a\nb"));
    CHECK_FALSE(meta_is_short(std::string(meta_inline_limit + 1, 'x')));
    CHECK(meta_brief("dense decoder (qwen3)") == "`dense decoder (qwen3)`");
    CHECK(meta_brief(toml(330)) == fmt::format("330 lines, {} bytes", toml(330).size()));
    const auto j = summary_json(25126);
    CHECK(meta_brief(j) == fmt::format("a JSON object of 4 members, {} bytes", j.size()));
    const std::string long_line(300, 'y');
    CHECK_THAT(meta_brief(long_line), Catch::StartsWith("300 bytes, starting `yyy"));
    CHECK(meta_brief(long_line).size() < 100);
}

TEST_CASE("a long meta value shown whole is laid out line by line, never escaped line breaks",
          "[traces][meta]") {
    const auto text = meta_whole(toml(5), "    ");
    CHECK(text == "    key0 = 0\n    key1 = 1\n    key2 = 2\n    key3 = 3\n    key4 = 4\n");
    const auto j = summary_json(25126);
    const auto laid = meta_whole(j, "  ");
    CHECK(escaped_line_breaks(laid) == 0);
    CHECK_THAT(laid, Catch::Contains("\n    \"cycles\": 25126,\n"));
    CHECK_THAT(laid, Catch::Contains("\"prompt\": [1,17,42,7]"));
    // Every line starts with the indent and fits a terminal; the layout parses back to the value.
    std::size_t at = 0;
    while (at < laid.size()) {
        auto nl = laid.find('\n', at);
        REQUIRE(nl != std::string::npos);
        CHECK(laid.substr(at, 2) == "  ");
        CHECK(nl - at <= meta_layout_width);
        at = nl + 1;
    }
    CHECK(boost::json::parse(laid) == boost::json::parse(j));
    // Bytes a terminal would not show are still escaped, tabs kept.
    CHECK(meta_whole("a\tb\x01", "") == "a\tb\\x01\n");
}

TEST_CASE("two long meta values differ in one short line naming what differs", "[traces][meta]") {
    auto lines = meta_difference(toml(330), toml(330, 7));
    CHECK(lines == "1 of 330 lines differ; the first, line 8: A `key7 = 7`, B `key7 = 999`");
    auto json = meta_difference(summary_json(1), summary_json(2));
    CHECK(json == "member cycles differs (1 of 4)");
    CHECK(meta_difference(std::string_view("x"), std::nullopt) == "A `x`, B absent");
    auto absent = meta_difference(std::nullopt, std::string_view(toml(330)));
    CHECK_THAT(absent, Catch::StartsWith("A absent, B 330 lines"));
}

TEST_CASE("trace show summarises long meta values, and shows them whole on request", "[traces][meta]") {
    auto t = sample_trace();
    t.header.meta["run.card"] = toml(330);
    t.header.meta["run.summary"] = summary_json(25126);
    const auto brief = to_text(summarise(t), t.header, "t.trace");
    CHECK(escaped_line_breaks(brief) == 0);
    CHECK_THAT(brief, Catch::Contains("meta producer = cardsim tests\n"));
    CHECK_THAT(brief, Catch::Contains("meta run.card: 330 lines"));
    CHECK_THAT(brief, Catch::Contains("(--meta shows it whole)"));
    // Meta is a small part of what is printed.
    std::size_t meta_bytes = 0;
    for (std::size_t at = 0; (at = brief.find("meta ", at)) != std::string::npos;) {
        auto nl = brief.find('\n', at);
        meta_bytes += nl - at;
        at = nl;
    }
    CHECK(meta_bytes * 3 < brief.size());
    const auto whole = to_text(summarise(t), t.header, "t.trace", true);
    CHECK(escaped_line_breaks(whole) == 0);
    CHECK_THAT(whole, Catch::Contains("meta run.card:\n    key0 = 0\n    key1 = 1\n"));
    CHECK_THAT(whole,
               Catch::Contains("meta note:\n    line one\n    line two\\x5c caf\\xc3\\xa9 tab\there\n"));
    CHECK_THAT(whole, Catch::Contains("\"cycles\": 25126"));
}

TEST_CASE("a diff of traces whose long meta differs puts the findings first and each meta key on one "
          "short line",
          "[traces][meta][diff]") {
    auto a = sample_trace();
    a.header.meta["run.card"] = toml(330);
    a.header.meta["run.summary"] = summary_json(100);
    auto b = a;
    b.header.meta["run.card"] = toml(330, 3);
    b.header.meta["run.summary"] = summary_json(200);
    b.records[1].end += 500;
    auto r = diff(a, b, 0.0);
    const auto text = to_text(r, "a.trace", "b.trace");
    CHECK(escaped_line_breaks(text) == 0);
    CHECK_THAT(text, Catch::Contains("note: meta run.card: 1 of 330 lines differ; the first, line 4: A "
                                     "`key3 = 3`, B `key3 = 999`\n"));
    CHECK_THAT(text, Catch::Contains("note: meta run.summary: member cycles differs (1 of 4)\n"));
    for (auto& n : r.notes)
        CHECK(n.size() < 200);
    // The findings (the total, the units) come before every note.
    auto first_note = text.find("note: ");
    CHECK(text.find("total: ") < first_note);
    CHECK(text.find("durations") < first_note);
}
