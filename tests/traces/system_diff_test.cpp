// A diff of two system traces (format version 3) compares each link by its ports and its messages
// one by one, not only by its totals: a link with other ports, a message moved in time, bytes swapped
// between two messages each differ, at the cycle tolerance of the rest of the diff; the text, JSON
// and CSV reports name the ports on both sides and the first message that differs.

#include "tests/support/scratch_dir.hpp"
#include "tests/traces/fixtures.hpp"
#include "traces/bless.hpp"
#include "traces/system_diff.hpp"
#include "traces/writer.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <string>

using namespace cardsim::traces;
namespace json = boost::json;

namespace {

/// A system of two cards joined both ways over two ports: a matvec, then a send on card 0 and a
/// receive on card 1 each; three messages of other sizes over link 0 -> 1 (gaps between them) and
/// one over link 1 -> 0.
Trace system_with_messages() {
    Trace t;
    t.header = testing::two_card_header();
    t.records.push_back(testing::card_record(0, 0, "matvec", "Matvec", 0, 40));
    t.records.push_back(testing::card_record(0, 1, "network", "Send", 40, 700));
    t.records.push_back(testing::card_record(1, 0, "matvec", "Matvec", 0, 40));
    t.records.push_back(testing::card_record(1, 1, "network", "Recv", 40, 720));
    t.messages = {
        {0, 1, 100, 200, 3072}, {0, 1, 1000, 1100, 1024}, {0, 1, 2000, 2100, 2048}, {1, 0, 150, 250, 512}};
    return t;
}

/// The JSON report of `r` parsed, and its link FROM -> TO (an error when the report lacks it).
json::object link_json(const SystemDiffReport& r, std::uint32_t from, std::uint32_t to) {
    auto report = json::parse(to_json(r, "a.trace", "b.trace")).as_object();
    for (auto& l : report.at("links").as_array())
        if (l.at("from").to_number<std::uint32_t>() == from && l.at("to").to_number<std::uint32_t>() == to)
            return l.as_object();
    FAIL("the JSON report has no link " << from << " -> " << to);
    return {};
}

/// Whether `text` holds `part`.
bool holds(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a system diff of two identical traces agrees, showing each link's ports and no message that "
          "differs",
          "[traces][system][diff]") {
    auto t = system_with_messages();
    auto r = diff_system(t, t, DiffOptions{});
    CHECK(r.agree());
    CHECK(holds(r.verdict(), "traces agree: 2 cards"));
    auto text = to_text(r, "a.trace", "b.trace");
    INFO(text);
    CHECK(holds(text, "ports A ports B messages A"));
    CHECK(holds(text, "  0 -> 1               2       2          3          3 "));
    CHECK_FALSE(holds(text, "messages differ"));
    auto l = link_json(r, 0, 1);
    CHECK(l.at("ports_a") == 2);
    CHECK(l.at("ports_b") == 2);
    CHECK(l.at("messages_differing") == 0);
    CHECK(l.at("first_message").is_null());
    CHECK(l.at("differs") == false);
    auto csv = to_csv(r, "a.trace", "b.trace");
    CHECK(holds(csv, "\n,link,0->1,ports,2,2,0,0.0000,0,,,,,,\n"));
    CHECK_FALSE(holds(csv, "message["));
    // The system's verdict is the first row, over 0.
    CHECK(csv.rfind("card,section,item,field,a,b,delta,pct,over,unit,opcode,phase,pc,layer,detail\n"
                    ",verdict,,,a.trace,b.trace,,,0,,,,,,\"traces agree: 2 cards,",
                    0) == 0);
}

TEST_CASE("a system diff sees a message moved in time, though its link's totals are the same",
          "[traces][system][diff]") {
    auto a = system_with_messages(), b = a;
    b.messages[1].start += 300; // 1000..1100 -> 1300..1400: same bytes, same busy cycles, same count
    b.messages[1].end += 300;
    auto r = diff_system(a, b, DiffOptions{});
    CHECK_FALSE(r.agree());
    CHECK(holds(r.verdict(), "link 0 -> 1 differs (1 of 3 messages from message 1)"));
    CHECK_FALSE(holds(r.verdict(), "link 1 -> 0"));
    auto text = to_text(r, "a.trace", "b.trace");
    CHECK(holds(text,
                "  link 0 -> 1: 1 of 3 messages differ; the first, message 1 (start, end): A start 1000 "
                "end 1100 bytes 1024, B start 1300 end 1400 bytes 1024\n"));
    auto l = link_json(r, 0, 1);
    CHECK(l.at("differs") == true);
    CHECK(l.at("messages_differing") == 1);
    auto& m = l.at("first_message").as_object();
    CHECK(m.at("index") == 1);
    CHECK(m.at("start_a") == 1000);
    CHECK(m.at("end_a") == 1100);
    CHECK(m.at("start_b") == 1300);
    CHECK(m.at("end_b") == 1400);
    CHECK(m.at("bytes_a") == 1024);
    CHECK(m.at("bytes_b") == 1024);
    CHECK(m.at("start_over") == true);
    CHECK(m.at("end_over") == true);
    CHECK(m.at("bytes_over") == false);
    CHECK(link_json(r, 1, 0).at("differs") == false);
    auto csv = to_csv(r, "a.trace", "b.trace");
    CHECK(holds(csv, "\n,link,0->1,message[1].start,1000,1300,300,30.0000,1,,,,,,\"1 of 3 messages differ; "
                     "the first: start, end\"\n"));
    CHECK(holds(csv, "\n,link,0->1,message[1].end,1100,1400,300,27.2727,1,"));
    CHECK(holds(csv, "\n,link,0->1,message[1].bytes,1024,1024,0,0.0000,1,"));
    // Every card agrees, the link does not: the system's verdict row says so, first.
    CHECK(holds(csv, "\n,verdict,,,a.trace,b.trace,,,1,,,,,,traces differ: link 0 -> 1 differs"));
    CHECK(holds(csv, "\n0,verdict,,,a.trace,b.trace,,,0,"));
}

TEST_CASE("a system diff sees a link with other ports", "[traces][system][diff]") {
    auto a = system_with_messages(), b = a;
    b.header.links[0].ports = 4;
    auto r = diff_system(a, b, DiffOptions{});
    CHECK_FALSE(r.agree());
    CHECK(holds(r.verdict(), "traces differ: link 0 -> 1 differs (ports 2 -> 4)"));
    auto text = to_text(r, "a.trace", "b.trace");
    INFO(text);
    CHECK(holds(text, "  0 -> 1               2       4          3          3 "));
    CHECK(holds(text, "differs\n"));
    auto l = link_json(r, 0, 1);
    CHECK(l.at("ports_a") == 2);
    CHECK(l.at("ports_b") == 4);
    CHECK(l.at("differs") == true);
    CHECK(l.at("messages_differing") == 0);
    CHECK(holds(to_csv(r, "a.trace", "b.trace"), "\n,link,0->1,ports,2,4,2,100.0000,1,,,,,,\n"));
    // The other direction keeps its two ports and agrees.
    CHECK(link_json(r, 1, 0).at("differs") == false);
}

TEST_CASE("a system diff sees bytes swapped between two messages, though its link's totals are the same",
          "[traces][system][diff]") {
    auto a = system_with_messages(), b = a;
    std::swap(b.messages[0].bytes, b.messages[1].bytes); // 3072, 1024 -> 1024, 3072
    auto r = diff_system(a, b, DiffOptions{});
    CHECK_FALSE(r.agree());
    CHECK(holds(r.verdict(), "link 0 -> 1 differs (2 of 3 messages from message 0)"));
    CHECK(holds(to_text(r, "a.trace", "b.trace"),
                "  link 0 -> 1: 2 of 3 messages differ; the first, message 0 (bytes): A start 100 end 200 "
                "bytes 3072, B start 100 end 200 bytes 1024\n"));
    auto l = link_json(r, 0, 1);
    CHECK(l.at("messages_differing") == 2);
    auto& m = l.at("first_message").as_object();
    CHECK(m.at("index") == 0);
    CHECK(m.at("bytes_a") == 3072);
    CHECK(m.at("bytes_b") == 1024);
    CHECK(m.at("bytes_over") == true);
    CHECK(m.at("start_over") == false);
    CHECK(m.at("end_over") == false);
    // At any cycle tolerance: bytes are compared exactly.
    DiffOptions loose;
    loose.cycles_tol_pct = 50;
    CHECK_FALSE(diff_system(a, b, loose).agree());
}

TEST_CASE("a system diff lets a message move within the cycle tolerance, by the rule of every cycle "
          "value, and sees it move beyond",
          "[traces][system][diff]") {
    auto a = system_with_messages(), b = a;
    b.messages[1].start += 10; // 1000..1100 -> 1010..1110: 1 % of its start, 0.91 % of its end
    b.messages[1].end += 10;
    DiffOptions within;
    within.cycles_tol_pct = 1; // deviates: |B - A| * 100 > 1 * A, strictly
    auto r = diff_system(a, b, within);
    CHECK(r.agree());
    CHECK(link_json(r, 0, 1).at("messages_differing") == 0);
    DiffOptions beyond;
    beyond.cycles_tol_pct = 0.5;
    auto over = diff_system(a, b, beyond);
    CHECK_FALSE(over.agree());
    auto m = link_json(over, 0, 1).at("first_message").as_object();
    CHECK(m.at("index") == 1);
    CHECK(m.at("start_over") == true);
    CHECK(m.at("end_over") == true);
    // At tolerance 0 (the default, and trace bless's) a message must not move a cycle.
    b = a;
    b.messages[2].end += 1;
    b.messages[3].start -= 1; // link 1 -> 0's one message, one cycle earlier and as long
    b.messages[3].end -= 1;
    auto strict = diff_system(a, b, DiffOptions{});
    CHECK_FALSE(strict.agree());
    CHECK(link_json(strict, 0, 1).at("first_message").at("end_over") == true);
    CHECK(link_json(strict, 1, 0).at("first_message").at("start_over") == true);
}

TEST_CASE("a system diff names the first message of one side only when a link carried more messages",
          "[traces][system][diff]") {
    auto a = system_with_messages(), b = a;
    b.messages.erase(b.messages.begin() + 2); // link 0 -> 1's last message
    auto r = diff_system(a, b, DiffOptions{});
    CHECK_FALSE(r.agree());
    CHECK(holds(r.verdict(), "link 0 -> 1 differs (messages 3 -> 2, bytes 6144 -> 4096, busy cycles -33.33%, "
                             "1 of 3 messages from message 2)"));
    CHECK(holds(to_text(r, "a.trace", "b.trace"),
                "  link 0 -> 1: 1 of 3 messages differ; the first, message 2 (only in A): A start 2000 end "
                "2100 bytes 2048, B none\n"));
    auto m = link_json(r, 0, 1).at("first_message").as_object();
    CHECK(m.at("index") == 2);
    CHECK(m.at("start_a") == 2000);
    CHECK(m.at("start_b").is_null());
    CHECK(m.at("bytes_b").is_null());
    auto csv = to_csv(r, "a.trace", "b.trace");
    INFO(csv);
    CHECK(holds(csv, "\n,link,0->1,message[2].bytes,2048,,,,1,,,,,,1 of 3 messages differ; the "
                     "first: only in A\n"));
}

TEST_CASE("blessing a system trace whose message moved says which message of which link changed",
          "[traces][system][diff][bless]") {
    cardsim::test::ScratchDir dir("traces");
    auto golden = system_with_messages(), fresh = golden;
    fresh.messages[0].start += 1;
    fresh.messages[0].end += 1;
    write_trace(dir.path() / "golden.trace", golden);
    write_trace(dir.path() / "fresh.trace", fresh);
    auto b = prepare_bless(dir.path() / "fresh.trace", dir.path() / "golden.trace");
    CHECK_FALSE(b.identical);
    CHECK(holds(b.changes, "traces differ: link 0 -> 1 differs (1 of 3 messages from message 0)"));
    CHECK(holds(b.changes,
                "the first, message 0 (start, end): A start 100 end 200 bytes 3072, B start 101 end "
                "201 bytes 3072"));
}
