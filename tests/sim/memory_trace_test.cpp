// Memory traces: the three formats parse, round-trip through the generator, stream past the read
// buffer, and malformed lines are errors naming the file and line.

#include "engine/error.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_patterns.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace cardsim::sim::memory;

/// A file `NAME.txt` (holding `text`, when given) in a scratch directory of its own, removed at
/// scope exit.
struct TempFile {
    cardsim::test::ScratchDir dir{"memory-trace"};
    std::filesystem::path path;
    explicit TempFile(const std::string& text = {}, const char* name = "trace")
        : path(dir / (std::string(name) + ".txt")) {
        if (!text.empty()) std::ofstream(path, std::ios::binary) << text;
    }
};

std::vector<MemRequest> read_all(const std::filesystem::path& p, TraceFormat f, TraceContext ctx = {}) {
    TraceReader r(p, f, ctx);
    std::vector<MemRequest> out;
    MemRequest m;
    while (r.next(m))
        out.push_back(m);
    return out;
}

std::string error_of(const std::filesystem::path& p, TraceFormat f, TraceContext ctx = {}) {
    try {
        read_all(p, f, ctx);
    } catch (const cardsim::Error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_CASE("a DRAMSim3 trace reads as addresses, directions and memory-clock cycles", "[trace]") {
    TempFile f("0x1f40 READ 12\n0X2000\tWRITE  13\n\n# note\n3000 P_MEM_RD 100\r\n");
    const MemoryClock clock(2400);
    const auto r = read_all(f.path, TraceFormat::DramSim3);
    REQUIRE(r.size() == 3);
    CHECK(r[0] == MemRequest{0x1f40, 64, Direction::Read, clock.ps_of(12)});
    CHECK(r[1] == MemRequest{0x2000, 64, Direction::Write, clock.ps_of(13)});
    CHECK(r[2] == MemRequest{0x3000, 64, Direction::Read, clock.ps_of(100)});
    CHECK(clock.ps_of(12) == 10000); // 12 x 833.33 ps
}

TEST_CASE("a DRAMSys .stl trace reads times of the player clock, lengths and data", "[trace]") {
    TempFile f("31:\tread\t0x400140\n32: (128) write 0x400180 0x" + std::string(256, 'a') +
               "\n40:\twrite\t0x10 0x" + std::string(128, '0') + "\n");
    TraceContext ctx;
    ctx.player_mhz = 1000; // 1 ns per cycle
    const auto r = read_all(f.path, TraceFormat::DramSys, ctx);
    REQUIRE(r.size() == 3);
    CHECK(r[0] == MemRequest{0x400140, 64, Direction::Read, 31000});
    CHECK(r[1] == MemRequest{0x400180, 128, Direction::Write, 32000});
    CHECK(r[2] == MemRequest{0x10, 64, Direction::Write, 40000});
}

TEST_CASE("a cardsim trace reads lengths, time deltas and absolute times", "[trace]") {
    TempFile f("# made by hand\ncardsim-ddr 1\nR 0\nR 40 +833\nW 1000 4096 +1667\nR ff @100\nR 8\n");
    const auto r = read_all(f.path, TraceFormat::Cardsim);
    REQUIRE(r.size() == 5);
    CHECK(r[0] == MemRequest{0, 64, Direction::Read, 0});
    CHECK(r[1] == MemRequest{0x40, 64, Direction::Read, 833});
    CHECK(r[2] == MemRequest{0x1000, 4096, Direction::Write, 2500});
    CHECK(r[3] == MemRequest{0xff, 64, Direction::Read, 100});
    CHECK(r[4] == MemRequest{8, 64, Direction::Read, 100});
}

TEST_CASE("every format round-trips every pattern through the generator", "[trace]") {
    const MemoryClock clock(2400);
    for (auto format : {TraceFormat::DramSim3, TraceFormat::DramSys, TraceFormat::Cardsim}) {
        for (auto kind :
             {PatternKind::Sequential, PatternKind::Random, PatternKind::Streams, PatternKind::Mix}) {
            PatternSpec s;
            s.kind = kind;
            s.count = 3000;
            s.gap_cycles = kind == PatternKind::Random ? 7 : 1;
            s.reads = 3;
            s.writes = 1;
            s.seed = 99;
            std::vector<MemRequest> made;
            PatternGenerator gen(s, clock);
            MemRequest m;
            while (gen.next(m))
                made.push_back(m);
            REQUIRE(made.size() == 3000);
            TempFile f;
            TraceContext ctx;
            {
                TraceWriter w(f.path, format, ctx);
                for (const auto& r : made)
                    w.write(r);
                w.close();
            }
            CHECK(detect_trace_format(f.path) == format);
            CHECK(read_all(f.path, format, ctx) == made);
        }
    }
}

TEST_CASE("the generator's patterns have the addresses they promise", "[trace]") {
    const MemoryClock clock(2400);
    auto first = [&](PatternSpec s, std::size_t n) {
        s.count = n;
        PatternGenerator g(s, clock);
        std::vector<MemRequest> v;
        MemRequest m;
        while (g.next(m))
            v.push_back(m);
        return v;
    };
    PatternSpec seq;
    seq.span = 256;
    const auto a = first(seq, 6);
    CHECK(a[3].address == 192);
    CHECK(a[4].address == 0); // wraps inside the span
    PatternSpec st;
    st.kind = PatternKind::Streams;
    st.streams = 4;
    st.span = 1 << 20;
    const auto b = first(st, 8);
    CHECK(b[1].address == (1 << 18));
    CHECK(b[4].address == 64);
    PatternSpec mix;
    mix.kind = PatternKind::Mix;
    mix.reads = 2;
    mix.writes = 1;
    const auto c = first(mix, 6);
    CHECK(c[0].direction == Direction::Read);
    CHECK(c[2].direction == Direction::Write);
    CHECK(c[2].address == mix.span / 2);
    CHECK(c[3].address == 128);
    CHECK(c[5].address == mix.span / 2 + 64);
    PatternSpec rnd;
    rnd.kind = PatternKind::Random;
    rnd.span = 1 << 20;
    for (const auto& r : first(rnd, 1000)) {
        CHECK(r.address % 64 == 0);
        CHECK(r.address < (1u << 20));
    }
    PatternSpec bad;
    bad.span = 32;
    CHECK_THROWS_WITH(PatternGenerator(bad, clock), Catch::Contains("--span 32 is smaller than one request"));
}

TEST_CASE("a trace longer than the read buffer streams through whole", "[trace]") {
    TempFile f;
    const std::size_t n = 300000; // ~3.6 MB of text, over three times the 1 MiB buffer
    {
        std::ofstream out(f.path, std::ios::binary);
        out << "cardsim-ddr 1\n";
        for (std::size_t i = 0; i < n; ++i)
            out << "R " << std::hex << i * 64 << std::dec << " 64 +10\n";
    }
    REQUIRE(std::filesystem::file_size(f.path) > 3 * (1u << 20));
    TraceReader r(f.path, TraceFormat::Cardsim, {});
    MemRequest m;
    std::size_t count = 0;
    std::uint64_t sum = 0;
    while (r.next(m)) {
        sum += m.address;
        ++count;
    }
    CHECK(count == n);
    CHECK(sum == 64ull * n * (n - 1) / 2);
    CHECK(m.time_ps == 10ull * n);
    CHECK(r.line() == n + 1);
}

TEST_CASE("malformed lines are errors naming the file, the line and what was expected", "[trace]") {
    struct Case {
        TraceFormat format;
        std::string text;
        std::string line;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {TraceFormat::DramSim3, "0x40 READ 1\nzz READ 2\n", ":2:", "expected a hexadecimal address"},
        {TraceFormat::DramSim3, "0x40 REED 1\n",
         ":1:", "expected READ or WRITE after the address, found `REED`"},
        {TraceFormat::DramSim3, "0x40 READ\n",
         ":1:", "expected a decimal cycle after READ, found the end of the line"},
        {TraceFormat::DramSim3, "0x40 READ 1 extra\n", ":1:", "unexpected `extra`"},
        {TraceFormat::DramSim3, "0x40 READ 99999999999999999999999\n", ":1:", "expected a decimal cycle"},
        {TraceFormat::DramSys, "\n\n31 read 0x40\n", ":3:", "expected a time `CYCLE:`"},
        {TraceFormat::DramSys, "31: fetch 0x40\n", ":1:", "expected read or write after the time"},
        {TraceFormat::DramSys, "31: (0) read 0x40\n", ":1:", "expected a length `(BYTES)`"},
        {TraceFormat::DramSys, "31: write 0x40 0x1234\n", ":1:", "expected 64 bytes of data"},
        {TraceFormat::Cardsim, "R 0\n", ":1:", "expected the header `cardsim-ddr 1`, found `R`"},
        {TraceFormat::Cardsim, "cardsim-ddr 2\n", ":1:", "version `2`"},
        {TraceFormat::Cardsim, " \n",
         ":1:", "expected the header `cardsim-ddr 1`, found the end of the file"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40\nX 40\n", ":3:", "expected R or W"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 4g\n",
         ":2:", "expected a hexadecimal address after R, found `4g`"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40 0\n", ":2:", "expected a length in bytes"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40 -5\n", ":2:", "expected a length in bytes"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40 64 +x\n", ":2:", "expected a time +DELTA_PS or @TIME_PS"},
        // Time stamps near 2^64 wrapped and timed pacing printed latencies of 3.8e18 ns.
        {TraceFormat::DramSim3, "0x40 READ 18446744073709551000\n", ":1:", "past the latest time"},
        {TraceFormat::DramSys, "18446744073709551000: read 0x40\n", ":1:", "past the latest time"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40 @18446744073709551000\n", ":2:", "past the latest time"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40 @4611686018427387904\nR 40 +18446744073709551000\n",
         ":3:", "past the latest time"},
        {TraceFormat::Cardsim, "cardsim-ddr 1\nR 40 @4611686018427387900\nR 40 +5\n",
         ":3:", "past the latest time"},
    };
    for (const auto& c : cases) {
        TempFile f(c.text);
        const std::string e = error_of(f.path, c.format);
        INFO(c.text);
        CHECK_THAT(e, Catch::StartsWith(f.path.string() + c.line));
        CHECK_THAT(e, Catch::Contains(c.expected));
    }
    TempFile far("cardsim-ddr 1\nR 0\nR 7fffffffc0 128\n");
    TraceContext ctx;
    ctx.address_limit = 32ull << 30;
    CHECK_THAT(error_of(far.path, TraceFormat::Cardsim, ctx),
               Catch::Contains(
                   ":3: request of 128 bytes at 0x7fffffffc0 runs past the end of the 34359738368 bytes"));
    CHECK_THROWS_WITH(TraceReader("/nonexistent/x.trace", TraceFormat::Cardsim, {}),
                      Catch::Contains("cannot open trace `/nonexistent/x.trace`"));
}

TEST_CASE("a writer that is not closed leaves no file behind", "[trace]") {
    TempFile f;
    std::filesystem::path partial;
    {
        TraceWriter w(f.path, TraceFormat::Cardsim, {});
        w.write({0, 64, Direction::Read, 0});
        partial = w.partial_path();
        CHECK(std::filesystem::exists(partial));
        CHECK_FALSE(std::filesystem::exists(f.path));
    }
    CHECK_FALSE(std::filesystem::exists(partial));
    CHECK_FALSE(std::filesystem::exists(f.path));
}

TEST_CASE("a trace writer never touches a user's file named after its output", "[trace]") {
    TempFile f;
    const auto mine = std::filesystem::path(f.path.string() + ".partial");
    { std::ofstream(mine) << "the user's\n"; }
    {
        TraceWriter w(f.path, TraceFormat::Cardsim, {});
        w.write({0, 64, Direction::Read, 0});
    } // not closed
    {
        TraceWriter w(f.path, TraceFormat::Cardsim, {});
        w.write({0, 64, Direction::Read, 0});
        w.close();
    }
    std::ifstream in(mine);
    std::string line;
    std::getline(in, line);
    CHECK(line == "the user's");
    std::filesystem::remove(mine);
}
