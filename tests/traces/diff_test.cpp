// trace diff: the first data divergence down to the element, duration and position deviations over
// a tolerance, header, shape, missing and extra commands, and the verdict.

#include "engine/error.hpp"
#include "fixtures.hpp"
#include "traces/diff.hpp"
#include "traces/lexical.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"
#include "traces/xxh64.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>

using namespace cardsim::traces;
using namespace cardsim::traces::testing;

namespace {

/// Recomputes a record's digest from its data blocks, as a producer whose output changed would.
void refresh_digest(Record& r) {
    Xxh64 h;
    for (auto& b : r.data)
        h.update(b.bytes);
    r.digest = h.digest();
}

/// Flips one bit of a record's data and refreshes its digest.
void flip(Record& r, std::size_t block, std::size_t byte, int bit) {
    r.data.at(block).bytes.at(byte) ^= static_cast<std::uint8_t>(1u << bit);
    refresh_digest(r);
}

/// Stretches a record's duration by `pct` per cent (rounded to a cycle), keeping its start.
void stretch(Record& r, double pct) {
    auto d = static_cast<double>(r.duration());
    r.end = r.start + static_cast<std::uint64_t>(std::llround(d * (1.0 + pct / 100.0)));
}

/// The trace after a write and a read, so every test diffs what a file holds.
Trace through_file(const Trace& t) {
    return parse_trace(to_text(t), "t.trace");
}

} // namespace

TEST_CASE("a trace agrees with itself read back from its file", "[traces][diff]") {
    auto a = sample_trace();
    auto r = diff(a, through_file(a), 0.0);
    CHECK(r.agree());
    CHECK(r.paired == a.records.size());
    CHECK(r.data_compared);
    CHECK_THAT(r.verdict(), Catch::StartsWith("traces agree: 8 commands, data bit-exact"));
    CHECK_THAT(to_text(r), Catch::StartsWith(r.verdict() + "\n"));
}

TEST_CASE("a one-bit change in an f32 data element is named by command and operand and element with both bit "
          "patterns",
          "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    flip(b.records[1], 0, 4 * 4 + 0, 0); // lowest bit of element 4 (3.14159265f)
    auto r = diff(a, through_file(b), 0.0);
    CHECK(!r.agree());
    REQUIRE(r.first_data);
    CHECK(r.first_data->index == 1);
    CHECK(r.first_data->digest_a == *a.records[1].digest);
    CHECK(r.first_data->digest_b == *b.records[1].digest);
    REQUIRE(r.first_data->element);
    auto& e = *r.first_data->element;
    CHECK(e.operand == 0);
    CHECK(e.element == 4);
    CHECK(e.encoding == Encoding::F32);
    auto pi_bits = std::bit_cast<std::uint32_t>(3.14159265f);
    CHECK(e.bits_a == pi_bits);
    CHECK(e.bits_b == (pi_bits ^ 1u));
    CHECK(r.data_divergent == 1);
    auto text = to_text(r);
    CHECK_THAT(text, Catch::Contains("data: first divergence at command 1 (matvec/matvec_q4)"));
    CHECK_THAT(text, Catch::Contains(fmt::format("operand 0 element 4 (f32): A 0x{:08x}", pi_bits)));
    CHECK_THAT(text, Catch::Contains(fmt::format("vs B 0x{:08x}", pi_bits ^ 1u)));
    CHECK_THAT(r.verdict(),
               Catch::StartsWith("traces differ") && Catch::Contains("data diverges at command 1"));
}

TEST_CASE("a one-bit change in an f16 or a hex block names the element in that block's encoding",
          "[traces][diff]") {
    auto a = sample_trace();
    SECTION("f16 block, operand 0") {
        auto b = a;
        flip(b.records[2], 0, 7, 6); // high byte of half 3
        auto r = diff(a, through_file(b), 0.0);
        REQUIRE(r.first_data);
        REQUIRE(r.first_data->element);
        auto& e = *r.first_data->element;
        CHECK(e.operand == 0);
        CHECK(e.element == 3);
        CHECK(e.encoding == Encoding::F16);
        std::uint32_t half_a = a.records[2].data[0].bytes[6] | (a.records[2].data[0].bytes[7] << 8);
        CHECK(e.bits_a == half_a);
        CHECK(e.bits_b == (half_a ^ 0x4000u));
    }
    SECTION("hex block, operand 2, on its second data line") {
        auto b = a;
        flip(b.records[2], 1, 65, 3);
        auto r = diff(a, through_file(b), 0.0);
        REQUIRE(r.first_data);
        REQUIRE(r.first_data->element);
        auto& e = *r.first_data->element;
        CHECK(e.operand == 2);
        CHECK(e.element == 65);
        CHECK(e.encoding == Encoding::Hex);
        CHECK(e.bits_a == a.records[2].data[1].bytes[65]);
        CHECK(e.bits_b == (a.records[2].data[1].bytes[65] ^ 8u));
    }
}

TEST_CASE("when the sides spell a block in different encodings the differing byte is named",
          "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    b.records[3].data[0].encoding = Encoding::Hex;
    flip(b.records[3], 0, 9, 0);
    auto r = diff(a, through_file(b), 0.0);
    REQUIRE(r.first_data);
    REQUIRE(r.first_data->element);
    CHECK(r.first_data->element->encoding == Encoding::Hex);
    CHECK(r.first_data->element->element == 9);
    CHECK(r.first_data->element->bits_a == a.records[3].data[0].bytes[9]);
}

TEST_CASE("a changed digest of a command without data lines is the first data divergence", "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    *b.records[0].digest ^= 0x10;
    auto r = diff(a, through_file(b), 0.0);
    REQUIRE(r.first_data);
    CHECK(r.first_data->index == 0);
    CHECK(!r.first_data->element);
    CHECK(r.first_data->digest_b == (*a.records[0].digest ^ 0x10));
    auto text = to_text(r);
    CHECK_THAT(text, Catch::Contains(fmt::format("digest A {} vs B {}", hex16(*a.records[0].digest),
                                                 hex16(*b.records[0].digest))));
    CHECK(!r.agree());
}

TEST_CASE("only the first data divergence is detailed and later ones are counted", "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    flip(b.records[5], 0, 0, 0);
    flip(b.records[3], 0, 0, 0);
    *b.records[7].digest ^= 1;
    auto r = diff(a, b, 0.0);
    REQUIRE(r.first_data);
    CHECK(r.first_data->index == 3);
    CHECK(r.data_divergent == 3);
    CHECK_THAT(to_text(r), Catch::Contains("3 commands diverge in data in all"));
}

TEST_CASE("a 10% cycle change is caught at a 5% tolerance and passes at 15%", "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    stretch(b.records[3], 10.0); // 3400 -> 3740 cycles; its end moves 9000 -> 9340 (+3.8%)
    b = through_file(b);
    auto at5 = diff(a, b, 5.0);
    CHECK(!at5.agree());
    REQUIRE(at5.durations.size() == 1);
    CHECK(at5.durations[0].index == 3);
    CHECK(at5.durations[0].over);
    CHECK(at5.positions.empty()); // its end moved by 3.8% only, its start not at all
    CHECK(!at5.total.over);       // the run still ends at 9500
    auto text = to_text(at5);
    CHECK_THAT(text, Catch::Contains("durations over 5%: 1 command of 8 paired"));
    CHECK_THAT(text, Catch::Matches("(.|\n)*\n +3 +step 0 +- +attention/attention +3400 +3740 +\\+340 "
                                    "\\(\\+10\\.00%\\)\n(.|\n)*"));
    CHECK_THAT(at5.verdict(), Catch::Contains("1 command with durations over 5%"));
    auto at15 = diff(a, b, 15.0);
    CHECK(at15.agree());
    CHECK(at15.durations.empty());
}

TEST_CASE("a whole run 10% slower deviates on every timed command and the total at 5% and agrees at 15%",
          "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    for (auto& r : b.records) {
        r.start = r.start * 11 / 10;
        r.end = r.end * 11 / 10;
    }
    auto at5 = diff(a, b, 5.0);
    // Every command but the zero-length argmax lasts 10% longer.
    CHECK(at5.durations.size() == a.records.size() - 1);
    CHECK(at5.total.over);
    CHECK(at5.total.a == 9500);
    CHECK(at5.total.b == 10450);
    // Every command but the first (its start 0 stays 0) moved its start, or its end.
    CHECK(at5.positions.size() == a.records.size());
    CHECK(!at5.positions[0].start);
    CHECK(diff(a, b, 15.0).agree());
}

TEST_CASE("at zero tolerance a one-cycle change deviates", "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    b.records[6].end += 1;
    auto r = diff(a, b, 0.0);
    REQUIRE(r.durations.size() == 1);
    CHECK(r.durations[0].index == 7);
    CHECK(r.durations[0].b == r.durations[0].a + 1);
    REQUIRE(r.positions.size() == 1);
    CHECK(r.positions[0].end);
    CHECK(!r.positions[0].start);
}

TEST_CASE("a value deviates only when it moves by strictly more than the tolerance of the reference",
          "[traces][diff]") {
    CHECK(!deviates(1000, 1100, 10.0));
    CHECK(deviates(1000, 1101, 10.0));
    CHECK(!deviates(1000, 900, 10.0));
    CHECK(deviates(1000, 899, 10.0));
    CHECK(!deviates(0, 0, 0.0));
    CHECK(deviates(0, 1, 50.0));
    CHECK(!deviates(UINT64_MAX, UINT64_MAX, 0.0));
    CHECK(deviates(UINT64_MAX, 0, 99.0));
}

TEST_CASE("header mismatches are reported but a different mode or meta is only a note", "[traces][diff]") {
    auto a = sample_trace();
    SECTION("program, config and knob point") {
        auto b = a;
        b.header.program ^= 1;
        b.header.config ^= 2;
        b.header.knob.attention = cardsim::numerics::AttentionMath::Array;
        auto r = diff(a, b, 0.0);
        REQUIRE(r.header.size() == 3);
        CHECK(r.header[0].field == "program");
        CHECK(r.header[1].field == "config");
        CHECK(r.header[2].field == "knob");
        CHECK_THAT(r.header[2].b, Catch::Contains("attention=array"));
        CHECK(!r.agree());
        CHECK_THAT(r.verdict(), Catch::Contains("3 header mismatches"));
    }
    SECTION("clock") {
        auto b = a;
        b.header.clock_mhz = 300;
        auto r = diff(a, b, 0.0);
        REQUIRE(r.header.size() == 1);
        CHECK(r.header[0].a == "331.25");
        CHECK(r.header[0].b == "300");
    }
    SECTION("a hardware capture of the same run agrees with the simulation") {
        auto b = a;
        b.header.mode = Mode::Hardware;
        b.header.meta = {{"producer", "harness"}, {"bitstream", "v7"}};
        auto r = diff(a, b, 0.0);
        CHECK(r.agree());
        CHECK(r.notes.size() == 4); // mode, meta bitstream, note, producer
        CHECK_THAT(to_text(r), Catch::Contains("note: mode: A full, B hardware"));
    }
}

TEST_CASE("a measured trace's long meta measured is summarised per opcode with its first entries",
          "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    // Many entries, as an --rtl run writes one per matvec: the note counts them, it does not list them.
    std::vector<Measured> m;
    for (int rep = 0; rep < 100; ++rep)
        for (std::uint64_t i : {1u, 4u, 8u, 2u, 9u}) // matvec_q4 x 3, rmsnorm, an index without a record
            m.push_back({i, 1000 + std::uint64_t(rep), 500 + i});
    record_measured(b.header, m);
    b.header.meta[std::string(source_meta)] = "rtl";
    const auto whole = b.header.meta.at(std::string(measured_meta));
    auto r = diff(a, b, 0.0);
    auto note = std::find_if(r.notes.begin(), r.notes.end(),
                             [](const std::string& n) { return n.starts_with("meta measured:"); });
    REQUIRE(note != r.notes.end());
    CHECK(*note ==
          "meta measured: A absent; B 500 commands (? 100, matvec_q4 300, rmsnorm 100), first 1:1000:501 "
          "4:1000:504 8:1000:508 ...");
    CHECK(note->size() < 200);
    CHECK(whole.size() > 5000); // what the note stands for
    SECTION("both sides measured, differently: each summarised") {
        auto c = b;
        record_measured(c.header, std::vector<Measured>{{3, 64, 70}});
        auto rc = diff(b, c, 0.0);
        auto n = std::find_if(rc.notes.begin(), rc.notes.end(),
                              [](const std::string& x) { return x.starts_with("meta measured:"); });
        REQUIRE(n != rc.notes.end());
        CHECK_THAT(*n, Catch::EndsWith("; B 1 command (attention 1), first 3:64:70"));
    }
    SECTION("the same measured commands on both sides: no note") {
        auto rb = diff(b, b, 0.0);
        CHECK(std::none_of(rb.notes.begin(), rb.notes.end(),
                           [](const std::string& x) { return x.starts_with("meta measured:"); }));
    }
}

TEST_CASE("commands present on one side only are listed as missing or extra", "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    b.records.erase(b.records.begin() + 3, b.records.begin() + 5); // indices 3 and 4
    auto extra = a.records.back();
    extra.index = 12;
    b.records.push_back(extra);
    auto r = diff(a, b, 0.0);
    CHECK(r.only_in_a == std::vector<std::uint64_t>{3, 4});
    CHECK(r.only_in_b == std::vector<std::uint64_t>{12});
    CHECK(r.paired == 6);
    CHECK(!r.agree());
    auto text = to_text(r);
    CHECK_THAT(text, Catch::Contains("only in A: 3-4 (2 commands)"));
    CHECK_THAT(text, Catch::Contains("only in B: 12 (1 command)"));
}

TEST_CASE("a different unit or opcode or byte count of a paired command is a shape mismatch",
          "[traces][diff]") {
    auto a = sample_trace();
    auto b = a;
    b.records[1].unit = "conv";
    b.records[2].read += 1;
    b.records[0].ddr[2].read += 64;
    auto r = diff(a, b, 0.0);
    REQUIRE(r.shapes.size() == 3);
    CHECK(r.shapes[0].index == 0);
    CHECK(r.shapes[0].field == "ddr[2].read");
    CHECK(r.shapes[1].field == "unit");
    CHECK(r.shapes[1].b == "conv");
    CHECK(r.shapes[2].field == "read");
    CHECK(!r.agree());
}

TEST_CASE("a timing-only trace cannot agree on data with a full one but two timing-only traces can agree",
          "[traces][diff]") {
    auto full = sample_trace();
    auto timing = full;
    timing.header.mode = Mode::TimingOnly;
    for (auto& r : timing.records) {
        r.digest.reset();
        r.data.clear();
    }
    auto mixed = diff(full, timing, 0.0);
    CHECK(!mixed.agree());
    CHECK(mixed.data_uncomparable);
    CHECK_THAT(to_text(mixed), Catch::Contains("data: not compared: B is timing-only"));
    auto both = diff(timing, through_file(timing), 0.0);
    CHECK(both.agree());
    CHECK(!both.data_compared);
    CHECK_THAT(both.verdict(), Catch::Contains("data not compared"));
}

TEST_CASE("a negative or non-finite tolerance is an error", "[traces][diff]") {
    auto a = sample_trace();
    CHECK_THROWS_AS(diff(a, a, -1.0), cardsim::Error);
    CHECK_THROWS_AS(diff(a, a, std::nan("")), cardsim::Error);
}

TEST_CASE("a measuring side's counted cycles stand for its commands' durations", "[traces][diff]") {
    auto a = sample_trace();
    auto b = a; // an RTL co-simulation's trace: the model's timeline, the RTL's cycles in `measured`
    b.header.meta[std::string(source_meta)] = "rtl";
    const auto model = a.records[1].duration(); // command 1, a matvec
    record_measured(b.header, std::vector<Measured>{{1, 2048, model * 2}});
    auto r = diff(a, b, 0.0);
    CHECK_FALSE(r.agree()); // the RTL took twice the model's cycles
    REQUIRE(r.durations.size() == 1);
    CHECK(r.durations[0].index == 1);
    CHECK(r.durations[0].a == model);
    CHECK(r.durations[0].b == model * 2);
    CHECK(diff(a, b, 150.0).agree());
    record_measured(b.header, std::vector<Measured>{{1, 2048, model}});
    CHECK(diff(a, b, 0.0).agree()); // counted as modelled
}

TEST_CASE("a trace without the optional ddr_channels line or pc fields can agree with a full one",
          "[traces][diff]") {
    auto a = sample_trace();
    auto b = a; // as the minimal producer of FORMAT.md writes it
    b.header.ddr_channels.reset();
    for (auto& r : b.records) {
        r.ddr.clear();
        r.pc.reset();
    }
    auto r = diff(a, b, 0.0);
    CHECK(r.header.empty());
    CHECK(r.agree());
    // No steps on one side: one phase, the same cycles on both (no false change per step).
    REQUIRE(r.phases.size() == 1);
    CHECK(r.phases[0].cycles_a == r.phases[0].cycles_b);
    CHECK(std::any_of(r.notes.begin(), r.notes.end(),
                      [](const std::string& n) { return n.starts_with("phases: B records no steps"); }));
    CHECK(std::any_of(r.notes.begin(), r.notes.end(),
                      [](const std::string& n) { return n.starts_with("ddr_channels: A 4, B"); }));
}
