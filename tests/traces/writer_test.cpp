// The writer: atomic files, and refusing records the reader would reject.

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "fixtures.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"

#include <catch2/catch.hpp>

using namespace cardsim::traces;
namespace io = cardsim::io;
using namespace cardsim::traces::testing;
using cardsim::Error;

TEST_CASE("a writer that is abandoned before finish leaves no file and no temporary", "[traces][writer]") {
    ScratchDir dir("traces");
    {
        Writer w(dir / "a.trace", sample_trace().header);
        w.add(sample_trace().records[0]);
        CHECK(dir.files().size() == 1); // only the temporary exists meanwhile
        CHECK(!std::filesystem::exists(dir / "a.trace"));
    }
    CHECK(dir.files().empty());
}

TEST_CASE("a record out of index order is refused and the destination keeps its old content",
          "[traces][writer]") {
    ScratchDir dir("traces");
    io::write_file_atomically(dir / "a.trace", "old content\n");
    auto t = sample_trace();
    std::swap(t.records[2], t.records[3]);
    REQUIRE_THROWS_WITH(write_trace(dir / "a.trace", t), Catch::Contains("a.trace") &&
                                                             Catch::Contains("command 2") &&
                                                             Catch::Contains("strictly increasing"));
    CHECK(io::read_file(dir / "a.trace") == "old content\n");
    CHECK(dir.files() == std::vector<std::string>{"a.trace"});
}

TEST_CASE("the writer refuses every record that breaks a rule of the format", "[traces][writer]") {
    struct Case {
        const char* what;
        void (*mutate)(Trace&);
        const char* expected;
    };
    const Case cases[] = {
        {"unit with a space", [](Trace& t) { t.records[0].unit = "dm a"; }, "unit `dm a` is not a name"},
        {"empty opcode", [](Trace& t) { t.records[0].opcode = ""; }, "opcode"},
        {"end before start", [](Trace& t) { t.records[1].end = 100; }, "before its start"},
        {"missing digest", [](Trace& t) { t.records[1].digest.reset(); }, "no digest"},
        {"digest in timing-only",
         [](Trace& t) {
             t.header.mode = Mode::TimingOnly;
             for (auto& r : t.records)
                 r.data.clear();
         },
         "timing-only"},
        {"data that does not hash to the digest", [](Trace& t) { t.records[1].data[0].bytes[0] ^= 1; },
         "hashes to"},
        {"data shorter than written", [](Trace& t) { t.records[1].written += 4; }, "expected 84"},
        {"ddr with the wrong channel count", [](Trace& t) { t.records[1].ddr.pop_back(); }, "expected 4"},
        {"ddr without ddr_channels", [](Trace& t) { t.header.ddr_channels.reset(); }, "no ddr_channels"},
        {"duplicate index", [](Trace& t) { t.records[2].index = 1; }, "not greater"},
        {"empty write with a non-empty digest", [](Trace& t) { t.records[6].digest = 1; },
         "digest of no bytes"},
        {"f32 block of a partial element", [](Trace& t) { t.records[1].data[0].bytes.pop_back(); },
         "whole f32 elements"},
        {"meta key with a space", [](Trace& t) { t.header.meta.emplace("a b", "x"); }, "meta key `a b`"},
        {"zero clock", [](Trace& t) { t.header.clock_mhz = 0; }, "clock"},
        {"clock beyond the decimal spelling", [](Trace& t) { t.header.clock_mhz = 1e20; },
         "no exact decimal"},
        {"65 ddr channels", [](Trace& t) { t.header.ddr_channels = 65; }, "1 to 64"},
    };
    ScratchDir dir("traces");
    for (auto& c : cases) {
        INFO(c.what);
        auto t = sample_trace();
        c.mutate(t);
        CHECK_THROWS_WITH(to_text(t), Catch::Contains(c.expected));
        CHECK_THROWS_AS(write_trace(dir / "bad.trace", t), Error);
        CHECK(dir.files().empty());
    }
}

TEST_CASE("an output file in a missing directory is an error naming it", "[traces][writer]") {
    ScratchDir dir("traces");
    REQUIRE_THROWS_WITH(write_trace(dir / "no/such/dir/a.trace", sample_trace()),
                        Catch::Contains("no/such/dir/a.trace"));
}
