// The VCD export: a valid dump whose busy signals are the trace's records, and nothing else.

#include "tests/support/vcd_check.hpp"
#include "tests/traces/fixtures.hpp"
#include "traces/vcd.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <set>

using namespace cardsim::traces;
using namespace cardsim::traces::testing;
using cardsim::test::high_intervals;
using cardsim::test::parse_vcd;

namespace {

/// A cycle of `t` in picoseconds, as the export rounds it.
std::uint64_t ps(const Trace& t, std::uint64_t cycle) {
    return static_cast<std::uint64_t>(
        std::llround(static_cast<long double>(cycle) * 1e6L / t.header.clock_mhz));
}

/// The union of `unit`'s record intervals, in picoseconds, as sorted disjoint intervals.
std::vector<std::pair<std::uint64_t, std::uint64_t>> busy_of(const Trace& t, const std::string& unit) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans, out;
    for (auto& r : t.records)
        if (r.unit == unit && r.end > r.start) spans.emplace_back(r.start, r.end);
    std::sort(spans.begin(), spans.end());
    for (auto [a, b] : spans)
        if (!out.empty() && a <= out.back().second)
            out.back().second = std::max(out.back().second, b);
        else
            out.emplace_back(a, b);
    for (auto& [a, b] : out)
        a = ps(t, a), b = ps(t, b);
    return out;
}

/// How many of the records `count` marks are in flight at picosecond `time`.
template <class F>
std::uint64_t in_flight_at(const Trace& t, std::uint64_t time, F count) {
    std::uint64_t n = 0;
    for (auto& r : t.records)
        if (count(r) && r.end > r.start && ps(t, r.start) <= time && time < ps(t, r.end)) ++n;
    return n;
}

} // namespace

TEST_CASE("a trace's VCD has a busy wire per unit that is high exactly while its records run",
          "[traces][vcd]") {
    const auto t = sample_trace();
    const auto text = to_vcd(t);
    const auto vcd = parse_vcd(text);
    CHECK(vcd.timescale == "1ps");
    std::set<std::string> units;
    for (auto& r : t.records)
        units.insert(r.unit);
    for (auto& u : units) {
        INFO(u);
        REQUIRE(vcd.vars.count("card." + u + ".busy"));
        auto& busy = vcd.vars.at("card." + u + ".busy");
        CHECK(busy.width == 1);
        CHECK(high_intervals(busy, vcd.last_time) == busy_of(t, u));
    }
    // The zero-length argmax shows no pulse; the run ends at the last record's end.
    CHECK(high_intervals(vcd.vars.at("card.argmax.busy"), vcd.last_time).empty());
    std::uint64_t last = 0;
    for (auto& r : t.records)
        last = std::max(last, r.end);
    CHECK(vcd.last_time == ps(t, last));
    CHECK(to_vcd(t) == text); // deterministic
}

TEST_CASE("a unit whose commands overlap also counts them, and each DDR channel its active commands",
          "[traces][vcd]") {
    const auto t = sample_trace();
    const auto vcd = parse_vcd(to_vcd(t));
    // matvec's commands 4 and 8 overlap: a `commands` count beside busy; the others have none.
    REQUIRE(vcd.vars.count("card.matvec.commands"));
    CHECK_FALSE(vcd.vars.count("card.norm.commands"));
    std::uint64_t peak = 0;
    for (auto [time, value] : vcd.vars.at("card.matvec.commands").changes) {
        CHECK(value == in_flight_at(t, time, [](const Record& r) { return r.unit == "matvec"; }));
        peak = std::max(peak, value);
    }
    CHECK(peak == 2);
    for (std::uint32_t c = 0; c < 4; ++c) {
        INFO("channel " << c);
        auto path = "card.ddr.channel" + std::to_string(c) + ".active";
        REQUIRE(vcd.vars.count(path));
        auto& v = vcd.vars.at(path);
        CHECK(v.changes.size() > 1);
        for (auto [time, value] : v.changes)
            CHECK(value == in_flight_at(t, time, [&](const Record& r) {
                      return r.ddr[c].read + r.ddr[c].written > 0;
                  }));
    }
}

TEST_CASE("a trace without ddr fields has no ddr scope, and an empty trace is a valid empty dump",
          "[traces][vcd]") {
    auto t = sample_trace();
    for (auto& r : t.records)
        r.ddr.clear();
    t.header.ddr_channels.reset();
    auto vcd = parse_vcd(to_vcd(t));
    for (auto& [path, v] : vcd.vars)
        CHECK_FALSE(path.starts_with("card.ddr."));
    CHECK(vcd.vars.count("card.dma.busy"));
    t.records.clear();
    CHECK(parse_vcd(to_vcd(t)).vars.empty());
}

TEST_CASE("write_vcd writes the file whole and leaves nothing else beside it", "[traces][vcd]") {
    const ScratchDir d("vcd-write");
    const auto t = sample_trace();
    write_vcd(d / "t.vcd", t);
    std::ifstream in(d / "t.vcd", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    CHECK(text == to_vcd(t));
    CHECK(d.files() == std::vector<std::string>{"t.vcd"});
    CHECK_THROWS(write_vcd(d / "missing" / "t.vcd", t));
    CHECK_FALSE(std::filesystem::exists(d / "missing"));
}

TEST_CASE("a trace whose cycles lie past the picoseconds a VCD can hold is refused, not wrapped",
          "[traces][vcd]") {
    auto t = sample_trace();
    // At 331.25 MHz a cycle is about 3019 ps: 2^62 cycles are far past 2^63 ps (llround overflowed
    // into #9223372036854775808 before).
    auto& last = t.records.back();
    last.start = std::uint64_t(1) << 62;
    last.end = last.start + 10;
    CHECK_THROWS_WITH(to_vcd(t), Catch::Contains("lies past 2^63 picoseconds"));
}
