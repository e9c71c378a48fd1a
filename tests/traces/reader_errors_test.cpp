// The reader rejects every malformed input with an error naming the file, the line and what was
// expected (FORMAT.md section 6).

#include "engine/error.hpp"
#include "fixtures.hpp"
#include "traces/lexical.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"
#include "traces/xxh64.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <sstream>

using namespace cardsim::traces;
using namespace cardsim::traces::testing;
using cardsim::Error;

namespace {

/// A valid trace of twelve lines, written by hand (line numbers are what the cases rely on).
std::vector<std::string> good_lines() {
    auto digest = hex16(xxh64(f32_bytes({1.0f, 2.0f})));
    return {
        "cardsim-trace 1",                                                         // 1
        "program 0123456789abcdef",                                                // 2
        "config fedcba9876543210",                                                 // 3
        "knob scaling=sub32 activations=one state=f32 cache=f16 attention=vector", // 4
        "mode full",                                                               // 5
        "clock_mhz 300",                                                           // 6
        "ddr_channels 2",                                                          // 7
        "meta producer=harness",                                                   // 8
        "cmd 0 dma load 0 10 64 8 " + digest + " ddr=64/0,0/8",                    // 9
        "data 0 0 f32 0 3f800000 40000000",                                        // 10
        "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e999",                            // 11
        "end 2",                                                                   // 12
    };
}

std::string join(const std::vector<std::string>& lines) {
    std::string s;
    for (auto& l : lines)
        s += l + "\n";
    return s;
}

/// The message of the error reading `text` throws, or a note that it threw none.
std::string error_of(const std::string& text) {
    try {
        parse_trace(text, "bad.trace");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

/// One malformed input: how it is made from the good lines, the line the error must name, and a
/// fragment of the expectation it must state.
struct Case {
    std::string what;
    std::string text;
    int line;
    std::string expected;
};

Case replace(std::string what, int n, std::string with, int line, std::string expected) {
    auto l = good_lines();
    l.at(static_cast<std::size_t>(n - 1)) = std::move(with);
    return {std::move(what), join(l), line, std::move(expected)};
}

Case insert(std::string what, int before, std::string text, int line, std::string expected) {
    auto l = good_lines();
    l.insert(l.begin() + (before - 1), std::move(text));
    return {std::move(what), join(l), line, std::move(expected)};
}

Case remove(std::string what, int n, int line, std::string expected) {
    auto l = good_lines();
    l.erase(l.begin() + (n - 1));
    return {std::move(what), join(l), line, std::move(expected)};
}

/// A version 2 trace whose second command (line 11, cycles 10 to 50) carries `option`.
Case v2(std::string what, std::string option, std::string expected) {
    auto l = good_lines();
    l[0] = "cardsim-trace 2";
    l[10] += " " + option;
    return {std::move(what), join(l), 11, std::move(expected)};
}

std::string with(std::string_view base, std::string_view from, std::string_view to) {
    std::string s(base);
    auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
    return s;
}

} // namespace

TEST_CASE("the hand-written base of the malformed cases is itself valid", "[traces][reader]") {
    auto t = parse_trace(join(good_lines()), "good.trace");
    CHECK(t.records.size() == 2);
    CHECK(t.records[0].data.at(0).bytes == f32_bytes({1.0f, 2.0f}));
    // And as version 2 with a split on its second command, whose cases below break it.
    auto l = good_lines();
    l[0] = "cardsim-trace 2";
    l[10] += " split=deps:4,issue:1,ddr.data:30,latency:10";
    auto t2 = parse_trace(join(l), "good.trace");
    REQUIRE(t2.records[1].split);
    CHECK((*t2.records[1].split)[TimePart::DdrData] == 30);
    CHECK(t2.records[1].ready() == 5);
    CHECK(!t2.records[0].split);
}

TEST_CASE("every malformed input is an error naming the file and the line and what was expected",
          "[traces][reader]") {
    auto g = good_lines();
    auto timing_only = good_lines();
    timing_only[4] = "mode timing-only";
    timing_only[8] = "cmd 0 dma load 0 10 64 8 - ddr=64/0,0/8";
    timing_only[10] = "cmd 2 matvec q4 10 50 128 0 -";
    auto good = join(g);
    std::vector<Case> cases{
        {"empty file", "", 1, "the file is empty"},
        replace("unknown version", 1, "cardsim-trace 4", 1,
                "version 4 is not supported, expected version 1 to 3"),
        replace("version 0", 1, "cardsim-trace 0", 1, "version 0 is not supported"),
        replace("version with a leading zero", 1, "cardsim-trace 01", 1, "expected the number 2"),
        replace("not a trace", 1, "hello", 1, "expected the first line `cardsim-trace 2`"),
        replace("a split in version 1", 11, "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e999 split=ddr.data:40",
                11, "version 1 has no `split=`"),
        v2("unknown split part", "split=ddr.data:30,ddr.rowhammer:10",
           "split entry `ddr.rowhammer:10` is malformed"),
        v2("split part without cycles", "split=ddr.data", "expected PART:CYCLES"),
        v2("split cycles with a sign", "split=ddr.data:+40", "split entry `ddr.data:+40` is malformed"),
        v2("repeated split part", "split=ddr.data:20,ddr.data:20", "split part `ddr.data` appears twice"),
        v2("split with a trailing comma", "split=ddr.data:40,", "ends with a comma"),
        v2("repeated split option", "split=ddr.data:40 split=ddr.data:40", "option `split` appears twice"),
        v2("split short of the duration", "split=deps:3,ddr.data:39",
           "sum to 39 cycles, expected its duration 40"),
        v2("split over the duration", "split=ddr.data:40,latency:1",
           "sum to 41 cycles, expected its duration 40"),
        // Parts near 2^64 whose sums wrap to the right totals (18446744073709551615 + 1 = 0).
        v2("split whose sums wrap past 2^64",
           "split=deps:18446744073709551615,unit:1,ddr.data:18446744073709551615,latency:41",
           "its split's parts sum past 2^64 cycles"),
        v2("split waiting before cycle 0", "split=deps:11,ddr.data:40",
           "waits 11 cycles (deps, unit, issue, link) before "
           "its start at cycle 10"),
        insert("comment before the magic line", 1, "# first", 1, "expected the first line"),
        replace("uppercase program digest", 2, "program 0123456789ABCDEF", 2, "16 lowercase hex digits"),
        replace("short program digest", 2, "program 0123456789abcde", 2, "16 lowercase hex digits"),
        remove("missing config line", 3, 3, "expected the `config` line"),
        replace("header out of order", 2, "config fedcba9876543210", 2, "expected the `program` line"),
        replace("unknown knob value", 4,
                "knob scaling=sub32 activations=one state=f32 cache=f8 attention=vector", 4,
                "expected one of f16 | int8 | int8_hadamard"),
        replace("unknown knob key", 4, "knob scaling=sub32 activations=one state=f32 cache=f16 speed=fast", 4,
                "unknown numerics knob `speed`"),
        replace("four knobs", 4, "knob scaling=sub32 activations=one state=f32 cache=f16", 4,
                "the five knobs"),
        replace("repeated knob", 4, "knob scaling=sub32 activations=one state=f32 cache=f16 scaling=sub32", 4,
                "appears twice"),
        replace("knob without =", 4, "knob scaling=sub32 activations=one state=f32 cache=f16 vector", 4,
                "expected key=value"),
        replace("unknown mode", 5, "mode fast", 5, "expected full | timing-only | hardware"),
        replace("zero clock", 6, "clock_mhz 0", 6, "expected a decimal number of MHz in 0.001.."),
        replace("clock in exponent notation", 6, "clock_mhz 3e2", 6,
                "expected a decimal number of MHz in 0.001.."),
        replace("clock with a bare dot", 6, "clock_mhz 300.", 6,
                "expected a decimal number of MHz in 0.001.."),
        replace("clock with a sign", 6, "clock_mhz +300", 6, "expected a decimal number of MHz in 0.001.."),
        // A tiny clock made every exported time stamp infinite (`"ts":Infinity`, invalid JSON).
        replace("tiny clock", 6, "clock_mhz 0.0000000001", 6, "expected a decimal number of MHz in 0.001.."),
        replace("clock past the range", 6, "clock_mhz 10000000000000", 6,
                "expected a decimal number of MHz in 0.001.."),
        replace("zero ddr channels", 7, "ddr_channels 0", 7, "expected 1 to 64"),
        replace("65 ddr channels", 7, "ddr_channels 65", 7, "expected 1 to 64"),
        insert("repeated meta key", 9, "meta producer=other", 9, "meta key `producer` appears twice"),
        insert("unknown source", 9, "meta source=bogus", 9,
               "meta source is `bogus`, expected simulated, rtl or hardware"),
        replace("escape without x", 8, "meta producer=a\\q", 8, "malformed escape"),
        replace("escape with uppercase hex", 8, "meta producer=a\\x0A", 8, "malformed escape"),
        replace("escape cut short", 8, "meta producer=a\\x0", 8, "malformed escape"),
        replace("meta key that is not a name", 8, "meta pro ducer=x", 8, "is not a name"),
        replace("meta without =", 8, "meta producer", 8, "expected `meta key=value`"),
        {"ddr_channels after meta",
         join({g[0], g[1], g[2], g[3], g[4], g[5], g[7], g[6], g[8], g[9], g[10], g[11]}), 8,
         "expected it before them"},
        insert("repeated header line", 9, "mode full", 9, "a second `mode` line"),
        replace("carriage return", 9, g[8] + "\r", 9, "carriage return"),
        replace("tab", 8, "meta producer=a\tb", 8, "a tab (0x09)"),
        replace("byte above 0x7e", 8, "meta producer=caf\xc3\xa9", 8, "the byte 0xc3"),
        {"no final line feed", good.substr(0, good.size() - 1), 12, "no line feed"},
        remove("no end line", 12, 11, "without the `end` line"),
        replace("wrong end count", 12, "end 3", 12, "counts 3 commands, expected 2"),
        replace("end with extra field", 12, "end 2 x", 12, "expected `end N`"),
        {"comment after the end line", good + "# late\n", 13, "after the end line"},
        {"empty line after the end line", good + "\n", 13, "after the end line"},
        replace("duplicate index", 11, "cmd 0 matvec q4 10 50 128 0 ef46db3751d8e999", 11,
                "repeats the previous index 0"),
        {"index out of order", with(with(good, "cmd 0 dma", "cmd 5 dma"), "data 0 0", "data 5 0"), 11,
         "command index 2 is below the previous index 5"},
        replace("end before start", 11, "cmd 2 matvec q4 50 10 128 0 ef46db3751d8e999", 11,
                "before its start 50"),
        replace("leading zero", 11, "cmd 02 matvec q4 10 50 128 0 ef46db3751d8e999", 11, "the index is `02`"),
        replace("number above 2^64 - 1", 11, "cmd 2 matvec q4 18446744073709551616 50 128 0 ef46db3751d8e999",
                11, "at most 2^64 - 1"),
        replace("negative number", 11, "cmd 2 matvec q4 10 50 -128 0 ef46db3751d8e999", 11,
                "bytes read is `-128`"),
        replace("double space", 11, "cmd 2  matvec q4 10 50 128 0 ef46db3751d8e999", 11, "an extra space"),
        replace("trailing space", 11, "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e999 ", 11, "trailing space"),
        replace("missing field", 11, "cmd 2 matvec q4 10 50 128 ef46db3751d8e999", 11, "has 8 fields"),
        replace("unit that is not a name", 11, "cmd 2 mat@vec q4 10 50 128 0 ef46db3751d8e999", 11,
                "the unit is `mat@vec`"),
        replace("unknown option", 11, "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e999 foo=1", 11,
                "unknown option `foo=1`"),
        replace("repeated option", 11, "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e999 pc=1 pc=2", 11,
                "option `pc` appears twice"),
        replace("bad pc", 11, "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e999 pc=x", 11, "pc is `x`"),
        replace("three ddr entries for two channels", 9, with(g[8], "ddr=64/0,0/8", "ddr=64/0,0/8,0/0"), 9,
                "has 3 entries, expected 2"),
        replace("malformed ddr entry", 9, with(g[8], "ddr=64/0,0/8", "ddr=64-0,0/8"), 9,
                "ddr entry `64-0` of channel 0 is malformed"),
        remove("ddr without ddr_channels", 7, 8, "no `ddr_channels` line"),
        replace("no digest in full mode", 11, "cmd 2 matvec q4 10 50 128 0 -", 11,
                "no digest, expected one in a full"),
        replace("malformed digest", 11, "cmd 2 matvec q4 10 50 128 0 ef46db3751d8e99", 11,
                "16 lowercase hex digits or `-`"),
        replace("empty write with another digest", 11, "cmd 2 matvec q4 10 50 128 0 0123456789abcdef", 11,
                "digest of no bytes"),
        replace("data that does not hash to the digest", 10, "data 0 0 f32 0 3f800000 40000001", 9,
                "hashes to"),
        replace("data shorter than written", 10, "data 0 0 f32 0 3f800000", 9, "hold 4 bytes, expected 8"),
        insert("data before any command", 9, "data 0 0 f32 0 3f800000", 9, "follows no cmd line"),
        insert("data after a command's data and another command", 12, "data 0 0 f32 2 3f800000", 12,
               "a data line of command 0 follows command 2"),
        replace("data of another command", 10, "data 1 0 f32 0 3f800000 40000000", 10,
                "a data line of command 1 follows command 0"),
        replace("wrong first offset", 10, "data 0 0 f32 1 3f800000 40000000", 10, "offset is 1, expected 0"),
        {"wrong continuation offset",
         with(good, "data 0 0 f32 0 3f800000 40000000\n",
              "data 0 0 f32 0 3f800000\ndata 0 0 f32 2 40000000\n"),
         11, "offset is 2, expected 1"},
        {"encoding changes within an operand",
         with(good, "data 0 0 f32 0 3f800000 40000000\n",
              "data 0 0 f32 0 3f800000\ndata 0 0 hex 4 00000040\n"),
         11, "changes encoding from f32 to hex"},
        {"operands out of order",
         with(good, "data 0 0 f32 0 3f800000 40000000\n",
              "data 0 1 f32 0 3f800000\ndata 0 0 f32 0 40000000\n"),
         11, "data of operand 0 follows operand 1"},
        replace("unknown encoding", 10, "data 0 0 f64 0 3f800000 40000000", 10, "expected hex | f16 | f32"),
        replace("f32 value of 7 digits", 10, "data 0 0 f32 0 3f80000 40000000", 10, "8 lowercase hex digits"),
        replace("uppercase data", 10, "data 0 0 f32 0 3F800000 40000000", 10, "8 lowercase hex digits"),
        replace("f16 value of 8 digits", 10, "data 0 0 f16 0 3f800000 40000000", 10,
                "4 lowercase hex digits"),
        replace("odd hex run", 10, "data 0 0 hex 0 0000803f0000004", 10,
                "an even number of lowercase hex digits"),
        replace("data line without values", 10, "data 0 0 f32 0", 10, "at least one value"),
        insert("unknown line kind", 11, "note something", 11, "unknown line kind `note`"),
        insert("header line among the commands", 11, "meta late=1", 11,
               "expected header lines before the first cmd"),
        {"digest in timing-only", join([&] {
             auto l = timing_only;
             l[8] = "cmd 0 dma load 0 10 64 8 0123456789abcdef ddr=64/0,0/8";
             l.erase(l.begin() + 9);
             return l;
         }()),
         9, "has a digest in a timing-only trace, expected `-`"},
        {"data in timing-only", join(timing_only), 10, "a data line in a timing-only trace"},
        {"file of the magic line only", join({g[0]}), 1, "ends in its header, expected a `program` line"},
        {"file that ends after the header", join({g[0], g[1], g[2], g[3], g[4], g[5]}), 6,
         "ends after its header"},
        {"file that ends inside the header", join({g[0], g[1], g[2]}), 3,
         "ends in its header, expected a `knob` line"},
    };
    for (auto& c : cases) {
        INFO(c.what);
        auto message = error_of(c.text);
        INFO(message);
        CHECK_THAT(message, Catch::StartsWith(fmt::format("bad.trace:{}: ", c.line)));
        CHECK_THAT(message, Catch::Contains(c.expected));
    }
}

TEST_CASE("a data line whose bytes were changed after the digest was computed is rejected at its command",
          "[traces][reader]") {
    auto text = to_text(sample_trace());
    auto at = text.find("\ndata 1 0 f32 0 3f800000");
    REQUIRE(at != std::string::npos);
    text[at + std::string("\ndata 1 0 f32 0 3f80000").size()] = '1'; // one bit of element 0
    // The newline at `at` ends the cmd line of command 1: its number is the newlines before it, plus one.
    auto cmd_line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1;
    REQUIRE_THROWS_WITH(
        parse_trace(text, "t.trace"),
        Catch::StartsWith(fmt::format("t.trace:{}: command 1: its data hashes to", cmd_line)));
}

TEST_CASE("a missing trace file is an error naming it", "[traces][reader]") {
    ScratchDir dir("traces");
    REQUIRE_THROWS_WITH(read_trace(dir / "absent.trace"), Catch::Contains("absent.trace"));
    REQUIRE_THROWS_WITH(read_trace(dir.path()), Catch::Contains("is a directory"));
}

TEST_CASE("a trace cut anywhere is rejected and never read as a shorter trace", "[traces][reader]") {
    auto text = to_text(sample_trace());
    for (std::size_t cut = 0; cut < text.size(); cut += 7) {
        INFO("cut at byte " << cut);
        CHECK_THROWS_AS(parse_trace(text.substr(0, cut), "cut.trace"), Error);
    }
}
