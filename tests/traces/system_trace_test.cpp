// A trace of a system of cards (format version 3): each record carries its card, the header lists
// the cards' programs and the links, the messages follow the commands; a one-card trace keeps
// version 2's bytes; the reader rejects every malformed card, link or message field by file, line
// and what was expected; the exports show a card per process / scope and a track per link.

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/traces/fixtures.hpp"
#include "traces/csv.hpp"
#include "traces/lexical.hpp"
#include "traces/perfetto.hpp"
#include "traces/reader.hpp"
#include "traces/summary.hpp"
#include "traces/vcd.hpp"
#include "traces/writer.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <set>

using namespace cardsim::traces;
using cardsim::Error;

namespace {

/// A system of two cards joined both ways over two ports: two commands on each card (a send on
/// card 0, a receive with a link wait on card 1) and one message each way.
Trace two_card_trace() {
    Trace t;
    t.header = testing::two_card_header();
    t.records.push_back(testing::card_record(0, 0, "matvec", "Matvec", 0, 40));
    t.records.push_back(testing::card_record(0, 1, "network", "Send", 40, 60));
    t.records.push_back(testing::card_record(1, 0, "matvec", "Matvec", 0, 40));
    t.records.push_back(testing::card_record(1, 1, "network", "Recv", 90, 100));
    TimeSplit split{};
    split[TimePart::Link] = 50;
    split[TimePart::Sram] = 10;
    t.records.back().split = split;
    t.messages = {{0, 1, 42, 60, 64}, {1, 0, 70, 80, 32}};
    return t;
}

/// The lines of the two-card trace as the writer spells them.
std::vector<std::string> system_lines() {
    std::vector<std::string> lines;
    auto text = to_text(two_card_trace());
    std::size_t at = 0;
    for (auto nl = text.find('\n'); nl != std::string::npos; at = nl + 1, nl = text.find('\n', at))
        lines.push_back(text.substr(at, nl - at));
    return lines;
}

/// The error reading `lines` (joined with LFs) gives, or `(no error)`.
std::string system_error(const std::vector<std::string>& lines) {
    std::string text;
    for (auto& l : lines)
        text += l + "\n";
    try {
        parse_trace(text, "sys.trace");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

/// The 1-based number of the first line of `lines` that starts with `prefix` (0: none).
std::size_t line_of(const std::vector<std::string>& lines, std::string_view prefix) {
    for (std::size_t i = 0; i < lines.size(); ++i)
        if (lines[i].rfind(prefix, 0) == 0) return i + 1;
    return 0;
}

} // namespace

TEST_CASE("a system trace carries each record's card and its links' messages and reads back",
          "[traces][system]") {
    auto t = two_card_trace();
    auto text = to_text(t);
    CHECK(text.rfind("cardsim-trace 3\n", 0) == 0);
    CHECK(text.find("\ncard 0 1111111111111111\ncard 1 2222222222222222\nlink 0 1 2\nlink 1 0 2\n") !=
          std::string::npos);
    CHECK(text.find(" card=1 pc=1 ddr=64/0,0/0 split=link:50,sram:10\n") != std::string::npos);
    CHECK(text.find("\nmessage 0 1 42 60 64\nmessage 1 0 70 80 32\nend 4\n") != std::string::npos);
    auto back = parse_trace(text, "sys.trace");
    CHECK(back == t);
    CHECK(to_text(back) == text);
    REQUIRE(back.records[3].card == 1u);
    CHECK(back.records[3].ready() == 40); // its wait for the message is its link part
    CHECK(card_count(back.header) == 2);
}

TEST_CASE("the streaming writer writes a system trace's bytes as to_text spells them, and the streaming "
          "reader gives its messages after its records",
          "[traces][system]") {
    cardsim::test::ScratchDir dir("traces");
    const auto path = dir.path() / "sys.trace";
    auto t = two_card_trace();
    write_trace(path, t);
    CHECK(cardsim::io::read_file(path) == to_text(t));
    auto reader = Reader::open(path);
    std::size_t records = 0;
    while (reader.next()) {
        ++records;
        if (records < t.records.size()) CHECK(reader.messages().empty());
    }
    CHECK(records == 4);
    CHECK(reader.messages() == t.messages);
    // A record after a message is refused: the messages follow every command.
    Writer w(dir.path() / "late.trace", t.header);
    w.add(t.records[0]);
    w.add(t.messages[0]);
    CHECK_THROWS_WITH(w.add(t.records[1]), Catch::Contains("after a message, expected every command before"));
}

TEST_CASE("a one-card trace keeps version 2's bytes: no card, link or message line", "[traces][system]") {
    auto t = two_card_trace();
    auto one = card_trace(t, 1);
    auto text = to_text(one);
    CHECK(text.rfind("cardsim-trace 2\n", 0) == 0);
    CHECK(text.find("\ncard ") == std::string::npos);
    CHECK(text.find(" card=") == std::string::npos);
    CHECK(text.find("\nlink ") == std::string::npos);
    CHECK(text.find("\nmessage ") == std::string::npos);
    CHECK(text.find("# cmd index unit opcode start end read written digest [pc=N]") != std::string::npos);
    CHECK(parse_trace(text, "card1.trace") == one);
    // Card 1's receive keeps its wait for the message, its `link` part (a one-card run has none).
    auto recv = one.records.back();
    REQUIRE(recv.split);
    CHECK((*recv.split)[TimePart::Link] == 50);
    CHECK(one.header.program == 0x2222222222222222);
    CHECK(one.records.size() == 2);
    CHECK(!one.records[0].card);
    CHECK_THROWS_WITH(card_trace(t, 2), Catch::Contains("the trace holds 2 cards"));
}

TEST_CASE("a writer refuses a system record or message that breaks a rule, naming it", "[traces][system]") {
    auto no_card = two_card_trace();
    no_card.records[2].card.reset();
    CHECK_THROWS_WITH(to_text(no_card), Catch::Contains("command 0: it names no card, expected card=K"));
    auto out_of_order = two_card_trace();
    std::swap(out_of_order.records[1], out_of_order.records[2]);
    CHECK_THROWS_WITH(to_text(out_of_order), Catch::Contains("expected the commands in card order"));
    auto one_card = card_trace(two_card_trace(), 0);
    one_card.records[0].card = 0;
    CHECK_THROWS_WITH(to_text(one_card), Catch::Contains("the trace is of one card"));
    auto bad_digest = two_card_trace();
    bad_digest.header.program = 1;
    CHECK_THROWS_WITH(to_text(bad_digest), Catch::Contains("the system's digest of its cards' programs"));
    auto overlap = two_card_trace();
    overlap.messages.insert(overlap.messages.begin() + 1, Message{0, 1, 50, 70, 8});
    CHECK_THROWS_WITH(to_text(overlap),
                      Catch::Contains("starts before the previous message on its link ends"));
}

TEST_CASE("every malformed card, link or message field is an error naming the file, the line and what was "
          "expected",
          "[traces][system]") {
    const auto good = system_lines();
    REQUIRE(system_error(good) == "(no error)");
    const auto card0 = line_of(good, "card 0"), card1 = line_of(good, "card 1"),
               link0 = line_of(good, "link 0");
    const auto cmd2 = line_of(good, "cmd 0 matvec Matvec 0 40 64 64 - card=1"),
               msg0 = line_of(good, "message 0"), msg1 = line_of(good, "message 1");
    REQUIRE((card0 && card1 && link0 && cmd2 && msg0 && msg1));
    struct Edit {
        std::string what;
        std::size_t line;       ///< the line replaced (1-based)
        std::string text;       ///< its new text ("" deletes it)
        std::size_t error_line; ///< the line the error names
        std::string expected;
    };
    auto replace_in = [&](std::size_t line, std::string_view from, std::string_view to) {
        auto s = good[line - 1];
        auto at = s.find(from);
        REQUIRE(at != std::string::npos);
        return s.replace(at, from.size(), to);
    };
    std::vector<Edit> edits{
        {"card= in version 2", 1, "cardsim-trace 2", card0, "a `card` line in a version 2 trace"},
        {"a card line out of sequence", card1, "card 2 2222222222222222", card1,
         "the card is 2, expected card 1"},
        {"a card digest that is not hex", card1, "card 1 22222222222222", card1,
         "card 1's program digest is `22222222222222`, expected 16 lowercase hex digits"},
        {"a link to a card not listed", link0, "link 0 5 2", link0,
         "the link's receiver is card 5, expected a card of the `card` lines above, 0 to 1"},
        {"a link from a card to itself", link0, "link 1 1 2", link0, "joins a card to itself"},
        {"a link with no ports", link0, "link 0 1 0", link0, "the link has 0 ports, expected 1 to 64"},
        {"links out of order", link0, "link 1 0 2", link0 + 1,
         "expected links in increasing (from, to) order"},
        {"a record of a card the system lacks", cmd2, replace_in(cmd2, "card=1", "card=2"), cmd2,
         "card=2 is not a card of the system, expected 0 to 1"},
        {"a card that is not a number", cmd2, replace_in(cmd2, "card=1", "card=x"), cmd2,
         "card is `x`, expected a decimal number"},
        {"a record without its card", cmd2, replace_in(cmd2, " card=1", ""), cmd2,
         "it names no card, expected card=K in a system trace of 2 cards"},
        {"a card before the previous one", cmd2 + 1, replace_in(cmd2 + 1, "card=1", "card=0"), cmd2 + 1,
         "card 0 command 1: it follows a command of card 1, expected the commands in card order"},
        {"a message over a link the header lacks", msg0, "message 0 2 42 60 64", msg0,
         "the header has no such link"},
        {"a message that ends at its start", msg0, "message 0 1 42 42 64", msg0,
         "expected its end after its start"},
        {"a message with a missing field", msg0, "message 0 1 42 60", msg0,
         "expected `message FROM TO START END BYTES`"},
        {"a message before the previous one on its link ends", msg1, "message 0 1 50 80 32", msg1,
         "starts before the previous message on its link ends"},
        {"a program digest that is not the system's", 2, "program 0123456789abcdef",
         line_of(good, "cmd 0 matvec"),
         "expected " +
             hex16(system_digest(std::vector<std::uint64_t>{0x1111111111111111, 0x2222222222222222}))},
    };
    for (auto& e : edits) {
        INFO(e.what);
        auto lines = good;
        lines[e.line - 1] = e.text;
        auto message = system_error(lines);
        INFO(message);
        CHECK_THAT(message, Catch::StartsWith(fmt::format("sys.trace:{}: ", e.error_line)));
        CHECK_THAT(message, Catch::Contains(e.expected));
    }
    // ddr_channels after the cards, messages out of the header's link order, a single card, and a
    // message among the commands.
    {
        auto lines = good;
        const auto channels = line_of(good, "ddr_channels");
        REQUIRE(channels + 1 == card0);
        std::swap(lines[channels - 1], lines[card0 - 1]);
        auto message = system_error(lines);
        INFO(message);
        CHECK_THAT(message, Catch::StartsWith(fmt::format("sys.trace:{}: ", card0)));
        CHECK_THAT(message, Catch::Contains("the `ddr_channels` line follows `card` lines"));
    }
    {
        auto lines = good;
        std::swap(lines[msg0 - 1], lines[msg1 - 1]);
        auto message = system_error(lines);
        INFO(message);
        CHECK_THAT(message, Catch::StartsWith(fmt::format("sys.trace:{}: ", msg1)));
        CHECK_THAT(message, Catch::Contains("expected the messages in the order of the header's links"));
    }
    {
        auto lines = good;
        lines.erase(lines.begin() + card1 - 1, lines.begin() + link0 + 1); // card 1 and both links
        auto message = system_error(lines);
        INFO(message);
        CHECK_THAT(message, Catch::Contains("the header has one `card` line, expected none (one card) or 2"));
    }
    {
        auto lines = good;
        std::swap(lines[cmd2 - 1], lines[msg0 - 1]); // a message before card 1's commands
        auto message = system_error(lines);
        INFO(message);
        CHECK_THAT(message, Catch::StartsWith(fmt::format("sys.trace:{}: ", cmd2 + 1)));
        CHECK_THAT(message, Catch::Contains("expected more `message` lines or the `end` line"));
    }
}

TEST_CASE("a system trace's exports show a process or scope per card and a track per link",
          "[traces][system]") {
    auto t = two_card_trace();
    auto doc = perfetto_json(t);
    std::set<std::string> processes, link_threads;
    std::set<std::int64_t> pids;
    std::size_t messages = 0;
    for (auto& v : doc.at("traceEvents").as_array()) {
        auto& e = v.as_object();
        pids.insert(e.at("pid").as_int64());
        if (e.at("name") == "process_name")
            processes.insert(std::string(e.at("args").as_object().at("name").as_string()));
        if (e.at("name") == "thread_name" && e.at("pid").as_int64() == 3)
            link_threads.insert(std::string(e.at("args").as_object().at("name").as_string()));
        if (e.at("name") == "message") ++messages;
    }
    CHECK(pids == std::set<std::int64_t>{1, 2, 3});
    CHECK(processes.count("cardsim card 0 (program 1111111111111111, timing-only)") == 1);
    CHECK(processes.count("cardsim card 1 (program 2222222222222222, timing-only)") == 1);
    CHECK(processes.count("links") == 1);
    CHECK(link_threads == std::set<std::string>{"link 0 -> 1 (2 ports)", "link 1 -> 0 (2 ports)"});
    CHECK(messages == 2);

    auto vcd = to_vcd(t);
    CHECK(vcd.find("$scope module card0 $end\n$scope module matvec $end") != std::string::npos);
    CHECK(vcd.find("$scope module card1 $end") != std::string::npos);
    CHECK(vcd.find("$scope module links $end\n$scope module link0to1 $end") != std::string::npos);

    auto csv = to_csv(t);
    CHECK(csv.rfind("card,index,unit,", 0) == 0);
    CHECK(csv.find("\n1,1,network,Recv,90,100,") != std::string::npos);

    auto s = summarise(t);
    REQUIRE(s.links.size() == 2);
    CHECK(s.links[0].busy_cycles == 18);
    CHECK(s.links[0].bytes == 64);
    CHECK(s.units.front().unit == "card0.matvec");
    auto text = to_text(s, t.header, "sys.trace");
    CHECK(text.find("link 0 -> 1 (2 ports): 1 messages, 64 bytes, busy 18 cycles") != std::string::npos);
    CHECK(text.find("system: 2 cards, 2 links") != std::string::npos);
}
