// Writing and reading traces: round trips, determinism, the spelling FORMAT.md fixes.

#include "engine/io/atomic_file.hpp"
#include "fixtures.hpp"
#include "traces/lexical.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"
#include "traces/xxh64.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <sstream>

using namespace cardsim::traces;
namespace io = cardsim::io;
using namespace cardsim::traces::testing;

TEST_CASE("a written trace reads back as the identical value", "[traces][format]") {
    ScratchDir dir("traces");
    auto t = sample_trace();
    write_trace(dir / "a.trace", t);
    auto back = read_trace(dir / "a.trace");
    CHECK(back.header == t.header);
    REQUIRE(back.records.size() == t.records.size());
    for (std::size_t i = 0; i < t.records.size(); ++i) {
        INFO("record " << i);
        CHECK(back.records[i] == t.records[i]);
    }
    CHECK(back == t);
}

TEST_CASE("writing the same trace twice gives byte-identical files", "[traces][format]") {
    ScratchDir dir("traces");
    write_trace(dir / "one.trace", sample_trace());
    write_trace(dir / "two.trace", sample_trace());
    auto one = io::read_file(dir / "one.trace"), two = io::read_file(dir / "two.trace");
    CHECK(!one.empty());
    CHECK(one == two);
    CHECK(one == to_text(sample_trace()));
}

TEST_CASE("rewriting a trace that was read back reproduces its bytes", "[traces][format]") {
    ScratchDir dir("traces");
    write_trace(dir / "a.trace", sample_trace());
    write_trace(dir / "b.trace", read_trace(dir / "a.trace"));
    CHECK(io::read_file(dir / "a.trace") == io::read_file(dir / "b.trace"));
}

TEST_CASE("the written file is printable ASCII lines ending in LF", "[traces][format]") {
    auto text = to_text(sample_trace());
    REQUIRE(text.back() == '\n');
    for (char c : text) {
        auto u = static_cast<unsigned char>(c);
        CHECK((u == '\n' || (u >= 0x20 && u <= 0x7e)));
    }
    CHECK(text.rfind("cardsim-trace 2\n", 0) == 0);
    CHECK(text.find("\nend 8\n") == text.size() - std::string("\nend 8\n").size());
}

TEST_CASE("meta values holding every byte value survive the round trip", "[traces][format]") {
    auto t = sample_trace();
    std::string all;
    for (int b = 0; b < 256; ++b)
        all += static_cast<char>(b);
    t.header.meta["all_bytes"] = all;
    t.header.meta["empty"] = "";
    t.header.meta["spaces"] = "  two leading, one trailing ";
    auto back = parse_trace(to_text(t), "meta.trace");
    CHECK(back.header.meta == t.header.meta);
    CHECK(to_text(t).find("meta note=line one\\x0aline two\\x5c caf\\xc3\\xa9 tab\\x09here\n") !=
          std::string::npos);
}

TEST_CASE("clock values round trip exactly and are spelt in fixed notation", "[traces][format]") {
    for (double mhz : {300.0, 331.25, 1000.0 / 3.0, 0.001, 100000.0, 1.0 / 7.0, 2.5e9}) {
        auto t = sample_trace();
        t.header.clock_mhz = mhz;
        auto text = to_text(t);
        auto at = text.find("clock_mhz ");
        auto spelt = text.substr(at + 10, text.find('\n', at) - at - 10);
        INFO(spelt);
        CHECK(spelt.find_first_not_of("0123456789.") == std::string::npos);
        CHECK(parse_trace(text, "clock.trace").header.clock_mhz == mhz);
    }
}

TEST_CASE("a timing-only trace round trips without digests or data", "[traces][format]") {
    auto t = sample_trace();
    t.header.mode = Mode::TimingOnly;
    for (auto& r : t.records) {
        r.digest.reset();
        r.data.clear();
    }
    auto text = to_text(t);
    CHECK(text.find("mode timing-only\n") != std::string::npos);
    CHECK(text.find(" 4096 4096 - ddr=") != std::string::npos);
    CHECK(parse_trace(text, "t.trace") == t);
}

TEST_CASE("the digest of no bytes is xxh64 of the empty string", "[traces][digest]") {
    CHECK(empty_digest == XXH64(nullptr, 0, 0));
    CHECK(xxh64(std::span<const std::uint8_t>{}) == empty_digest);
}

TEST_CASE("a digest fed in pieces equals the digest of the concatenation", "[traces][digest]") {
    auto a = pattern(1000, 5), b = pattern(37, 6);
    std::vector<std::uint8_t> both = a;
    both.insert(both.end(), b.begin(), b.end());
    Xxh64 h;
    h.update(a);
    h.update(b);
    CHECK(h.digest() == xxh64(both));
    CHECK(xxh64(both) == XXH64(both.data(), both.size(), 0));
}

TEST_CASE("set_written digests the write operands concatenated in operand order", "[traces][digest]") {
    auto a = pattern(12, 7), b = f32_bytes({1.0f, 2.0f});
    std::vector<std::uint8_t> ab = a, ba = b;
    ab.insert(ab.end(), b.begin(), b.end());
    ba.insert(ba.end(), a.begin(), a.end());
    Record r;
    std::vector<WrittenOperand> ops{{a, Encoding::Hex}, {b, Encoding::F32}};
    set_written(r, ops, true);
    CHECK(r.written == 20);
    CHECK(r.digest == xxh64(ab));
    CHECK(r.digest != xxh64(ba));
    REQUIRE(r.data.size() == 2);
    CHECK(r.data[0].operand == 0);
    CHECK(r.data[1].operand == 1);
    CHECK(r.data[1].bytes == b);
}

TEST_CASE("f32 and f16 data lines spell each element's bit pattern of little-endian bytes",
          "[traces][format]") {
    auto t = sample_trace();
    t.records.resize(1);
    Record& r = t.records[0];
    std::vector<std::uint8_t> half{0x00, 0x3c, 0x00, 0xc0}; // 1.0, -2.0 as binary16, little-endian
    auto one = f32_bytes({1.0f, -0.0f});
    std::vector<WrittenOperand> ops{{one, Encoding::F32}, {half, Encoding::F16}, {half, Encoding::Hex}};
    set_written(r, ops, true);
    auto text = to_text(t);
    CHECK(text.find("\ndata 0 0 f32 0 3f800000 80000000\n") != std::string::npos);
    CHECK(text.find("\ndata 0 1 f16 0 3c00 c000\n") != std::string::npos);
    CHECK(text.find("\ndata 0 2 hex 0 003c00c0\n") != std::string::npos);
    auto back = parse_trace(text, "e.trace");
    CHECK(back.records[0].data[0].bytes == std::vector<std::uint8_t>{0, 0, 0x80, 0x3f, 0, 0, 0, 0x80});
}

TEST_CASE("long blocks are split over data lines whose offsets count the elements before them",
          "[traces][format]") {
    auto text = to_text(sample_trace());
    // 20 f32 elements: 16 on the first line, 4 on the second, the second starting at element 16.
    CHECK(text.find("\ndata 1 0 f32 0 3f800000 bf800000 00000000 3f000000 ") != std::string::npos);
    CHECK(text.find("\ndata 1 0 f32 16 ") != std::string::npos);
    // 70 hex bytes of operand 2: 64 then 6, the empty operand 1 has no block.
    CHECK(text.find("\ndata 2 2 hex 64 ") != std::string::npos);
    CHECK(text.find("\ndata 2 1 ") == std::string::npos);
}

TEST_CASE("a trace written by hand the way a harness would is read", "[traces][format]") {
    auto bytes = f32_bytes({1.0f, 2.0f, 3.0f});
    auto text = fmt::format("cardsim-trace 1\n"
                            "# written by a test harness\n"
                            "program 00000000000000aa\n"
                            "config 00000000000000bb\n"
                            "\n"
                            "knob attention=array cache=int8 state=f16 activations=two scaling=sub32\n"
                            "mode hardware\n"
                            "clock_mhz 331.5\n"
                            "ddr_channels 1\n"
                            "meta bitstream=v7 build 2024\n"
                            "cmd 3 matvec matvec_q4 10 20 100 12 {} ddr=100/12 pc=0\n"
                            "# its bytes\n"
                            "data 3 0 f32 0 3f800000\n"
                            "data 3 0 f32 1 40000000 40400000\n"
                            "cmd 9 argmax argmax 20 21 12 0 ef46db3751d8e999\n"
                            "end 2\n",
                            hex16(xxh64(bytes)));
    auto t = parse_trace(text, "harness.trace");
    CHECK(t.header.mode == Mode::Hardware);
    CHECK(t.header.clock_mhz == 331.5);
    CHECK(t.header.knob.attention == cardsim::numerics::AttentionMath::Array);
    CHECK(t.header.knob.cache == cardsim::numerics::CacheFormat::Int8);
    CHECK(t.header.meta.at("bitstream") == "v7 build 2024");
    REQUIRE(t.records.size() == 2);
    CHECK(t.records[0].pc == 0u);
    CHECK(t.records[0].ddr == std::vector<ChannelBytes>{{100, 12}});
    CHECK(t.records[0].data.at(0).bytes == bytes);
    CHECK(t.records[1].index == 9);
    CHECK(t.records[1].duration() == 1);
}

TEST_CASE("the streaming reader gives the records one at a time and then nothing", "[traces][format]") {
    auto t = sample_trace();
    auto reader = Reader::from_text(to_text(t), "s.trace");
    CHECK(reader.header() == t.header);
    for (auto& expected : t.records) {
        auto r = reader.next();
        REQUIRE(r);
        CHECK(*r == expected);
    }
    CHECK(!reader.next());
    CHECK(!reader.next());
}

TEST_CASE("a trace with a split on every command reads back as the identical value",
          "[traces][format][split]") {
    ScratchDir dir("traces");
    auto t = with_splits(sample_trace());
    write_trace(dir / "s.trace", t);
    auto text = io::read_file(dir / "s.trace");
    CHECK(text.rfind("cardsim-trace 2\n", 0) == 0);
    // Nonzero parts only, in file order: command 1 (120 to 5400) waits 7 for deps, 3 for its unit.
    CHECK(text.find(" split=deps:7,unit:3,issue:1,ddr.refresh:1320,ddr.data:2640,latency:1320\n") !=
          std::string::npos);
    auto back = read_trace(dir / "s.trace");
    CHECK(back == t);
    for (auto& r : back.records) {
        INFO("command " << r.index);
        REQUIRE(r.split);
        CHECK(r.split->busy() == r.duration());
        CHECK(r.ready() + r.split->total() == r.end);
    }
}

TEST_CASE("a version 1 trace, which has no split field, still reads", "[traces][format][split]") {
    // A trace as cardsim wrote it before version 2: its first line says 1.
    auto text = to_text(sample_trace());
    REQUIRE(text.rfind("cardsim-trace 2\n", 0) == 0);
    text.replace(0, std::string("cardsim-trace 2").size(), "cardsim-trace 1");
    auto t = parse_trace(text, "old.trace");
    CHECK(t == sample_trace());
    for (auto& r : t.records)
        CHECK(!r.split);
}

TEST_CASE("a golden trace as version 1 wrote it, without splits, reads and equals the golden without them",
          "[traces][format][split]") {
    auto golden_path = std::filesystem::path(CARDSIM_SOURCE_DIR) / "traces/golden/hybrid-sub32.trace";
    auto golden = read_trace(golden_path);
    REQUIRE(!golden.records.empty());
    // Today's golden records a split on every command; version 1 had none: take them out.
    std::string old;
    for (auto& line : [&] {
             std::vector<std::string> v;
             std::istringstream in(io::read_file(golden_path));
             for (std::string l; std::getline(in, l);)
                 v.push_back(l);
             return v;
         }()) {
        if (line.rfind("cardsim-trace ", 0) == 0) line = "cardsim-trace 1";
        if (auto at = line.find(" split="); at != std::string::npos) line.erase(at);
        old += line + "\n";
    }
    auto t = parse_trace(old, "hybrid-sub32-v1.trace");
    for (auto& r : golden.records) {
        CHECK(r.split); // the golden carries them (else this test checks nothing)
        r.split.reset();
    }
    CHECK(t == golden);
}
