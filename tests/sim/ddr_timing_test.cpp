// The DDR4 timing core against the closed forms of its timing parameters (all read from the
// config, so a changed config changes the expectations with it).

#include "engine/card/address_map.hpp"
#include "engine/card/card_config.hpp"
#include "sim/memory/channel_timing.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace {

using namespace cardsim::sim::memory;
using cardsim::card::DdrConfig;

DdrConfig ddr(std::initializer_list<const char*> sets = {}) {
    std::vector<cardsim::card::Override> o;
    for (auto s : sets)
        o.push_back(cardsim::card::parse_override(s));
    return cardsim::card::load_card_config({}, o).ddr;
}

/// The channel-local byte address of a burst in (bank group, bank, row, column), found by search
/// through the map so the test does not restate the mapping.
std::uint64_t address_of(const DdrConfig& d, std::uint32_t bg, std::uint32_t bank, std::uint32_t row,
                         std::uint32_t column = 0) {
    const auto map = cardsim::card::AddressMap::build(d);
    std::uint64_t a = 0;
    for (const auto& p : map.pieces()) {
        std::uint64_t v = p.field == cardsim::card::DramField::BankGroup ? bg
                          : p.field == cardsim::card::DramField::Bank    ? bank
                          : p.field == cardsim::card::DramField::Row     ? row
                                                                         : column;
        a |= ((v >> p.field_shift) & ((1ull << p.bits) - 1)) << p.source_shift;
    }
    const std::uint64_t address = a << map.burst_shift();
    REQUIRE(map.decode(address) == cardsim::card::DramCoord{bg, bank, row, column});
    return address;
}

} // namespace

TEST_CASE("an idle read opens its row: tRCD + CL + the burst", "[ddr]") {
    const DdrConfig d = ddr();
    ChannelTiming t(d);
    const auto& p = d.timing;
    CHECK(t.access(Direction::Read, 0, 64, 100) == 100 + p.trcd + p.cl + p.burst_cycles());
    CHECK(t.stats().row_misses == 1);
}

TEST_CASE("a row hit costs CL + the burst, a row conflict tRP + tRCD more", "[ddr]") {
    const DdrConfig d = ddr();
    const auto& p = d.timing;
    ChannelTiming t(d);
    t.access(Direction::Read, address_of(d, 0, 0, 5), 64, 0);
    CHECK(t.access(Direction::Read, address_of(d, 0, 0, 5, 3), 64, 1000) == 1000 + p.cl + p.burst_cycles());
    CHECK(t.access(Direction::Read, address_of(d, 0, 0, 6), 64, 2000) ==
          2000 + p.trp + p.trcd + p.cl + p.burst_cycles());
    CHECK(t.stats().row_hits == 1);
    CHECK(t.stats().row_misses == 1);
    CHECK(t.stats().row_conflicts == 1);
}

TEST_CASE("reads in one bank group are tCCD_L apart, in different groups tCCD_S", "[ddr]") {
    const DdrConfig d = ddr();
    const auto& p = d.timing;
    ChannelTiming t(d);
    for (std::uint32_t g = 0; g < 4; ++g)
        t.access(Direction::Read, address_of(d, g, 0, 0), 64, 0);
    const Cycle same1 = t.access(Direction::Read, address_of(d, 0, 0, 0, 1), 64, 1000);
    const Cycle same2 = t.access(Direction::Read, address_of(d, 0, 0, 0, 2), 64, 1000);
    CHECK(same2 - same1 == p.tccd_l);
    const Cycle other = t.access(Direction::Read, address_of(d, 1, 0, 0, 1), 64, 1000);
    CHECK(other - same2 == p.tccd_s);
}

TEST_CASE("a fifth ACTIVATE waits for tFAW after the first", "[ddr]") {
    const DdrConfig d = ddr();
    const auto& p = d.timing;
    REQUIRE(p.tfaw > 4 * p.trrd_s);
    ChannelTiming t(d);
    Cycle last = 0;
    for (std::uint32_t i = 0; i < 5; ++i)
        last = t.access(Direction::Read, address_of(d, i % 4, i / 4, 0), 64, 1000);
    CHECK(last == 1000 + p.tfaw + p.trcd + p.cl + p.burst_cycles());
    CHECK(t.stats().row_misses == 5);
}

TEST_CASE("a read after a write in its bank group waits CWL + burst + tWTR_L", "[ddr]") {
    const DdrConfig d = ddr({"ddr.controller.write_queue=0"});
    const auto& p = d.timing;
    ChannelTiming t(d);
    t.access(Direction::Read, address_of(d, 0, 0, 0), 64, 0); // open the row
    const Cycle w = t.access(Direction::Write, address_of(d, 0, 0, 0, 1), 64, 1000);
    CHECK(w == 1000 + p.cwl + p.burst_cycles()); // a row hit, written
    const Cycle r = t.access(Direction::Read, address_of(d, 0, 0, 0, 2), 64, 1000);
    CHECK(r == 1000 + p.cwl + p.burst_cycles() + p.twtr_l + p.cl + p.burst_cycles());
    CHECK(t.stats().turnarounds == 2);
}

TEST_CASE("a write after a read waits tRTW", "[ddr]") {
    const DdrConfig d = ddr({"ddr.controller.write_queue=0"});
    const auto& p = d.timing;
    ChannelTiming t(d);
    t.access(Direction::Read, address_of(d, 0, 0, 0), 64, 0);
    t.access(Direction::Read, address_of(d, 1, 0, 0), 64, 0);
    const Cycle r = t.access(Direction::Read, address_of(d, 0, 0, 0, 1), 64, 1000);
    const Cycle w = t.access(Direction::Write, address_of(d, 1, 0, 0, 1), 64, 1000);
    CHECK(w - (r - p.cl - p.burst_cycles()) == p.trtw + p.cwl + p.burst_cycles());
}

TEST_CASE("refresh runs every tREFI and blocks the rank for tRFC", "[ddr]") {
    const DdrConfig d = ddr();
    const auto& p = d.timing;
    ChannelTiming t(d);
    t.access(Direction::Read, 0, 64, 0);
    // Arriving exactly when the first refresh is due: rows closed, the rank busy for tRFC (the
    // open row is precharged first).
    CHECK(t.access(Direction::Read, 0, 64, p.trefi) ==
          p.trefi + p.trp + p.trfc + p.trcd + p.cl + p.burst_cycles());
    CHECK(t.stats().refreshes == 1);
    // Idle for ten intervals: ten more refreshes, the bank closed again.
    t.access(Direction::Read, 0, 64, 11ull * p.trefi + 1);
    CHECK(t.stats().refreshes == 11);
    CHECK(t.stats().refresh_cycles == 11ull * p.trfc);
    CHECK(t.stats().row_misses == 3);
}

TEST_CASE("a long sequential read runs at the burst rate between refreshes", "[ddr]") {
    const DdrConfig d = ddr();
    const auto& p = d.timing;
    ChannelTiming t(d);
    const std::uint64_t bytes = 8 << 20;
    const Cycle end = t.access(Direction::Read, 0, bytes, 0);
    const double bus = static_cast<double>(bytes / 64 * p.burst_cycles());
    const double refresh = static_cast<double>(t.stats().refresh_cycles);
    CHECK(static_cast<double>(end) >= bus + refresh);
    CHECK(static_cast<double>(end) <= (bus + refresh) * 1.02); // row changes overlap the transfers
    CHECK(t.stats().read_bursts == bytes / 64);
}

TEST_CASE("the closed page policy opens the row for every access", "[ddr]") {
    const DdrConfig d = ddr({"ddr.controller.page_policy=closed"});
    const auto& p = d.timing;
    ChannelTiming t(d);
    t.access(Direction::Read, 0, 64, 0);
    CHECK(t.access(Direction::Read, 0, 64, 1000) == 1000 + p.trcd + p.cl + p.burst_cycles());
    CHECK(t.stats().row_hits == 0);
    CHECK(t.stats().row_misses == 2);
}

TEST_CASE("posted writes complete when accepted and reach the DRAM in batches", "[ddr]") {
    const DdrConfig d = ddr();
    const std::uint32_t q = d.controller.write_queue;
    REQUIRE(q > 0);
    ChannelTiming t(d);
    CHECK(t.access(Direction::Write, 0, 64, 100) == 100);
    CHECK(t.stats().write_bursts == 0);
    for (std::uint32_t i = 1; i < q; ++i)
        t.access(Direction::Write, 64ull * i, 64, 100);
    CHECK(t.stats().write_bursts == 0);                          // queue full, nothing issued yet
    CHECK(t.access(Direction::Write, 64ull * q, 64, 100) > 100); // waits for the batch to start
    CHECK(t.stats().write_batches == 1);
    CHECK(t.stats().write_bursts == q);
    const Cycle end = t.flush();
    CHECK(t.stats().write_bursts == q + 1);
    CHECK(end == t.stats().last_data);
    // A write larger than the queue streams straight through and completes when written.
    ChannelTiming big(d);
    const Cycle done = big.access(Direction::Write, 0, 64ull * (q + 1), 0);
    CHECK(big.stats().write_bursts == q + 1);
    CHECK(done == big.stats().last_data);
}

TEST_CASE("the closed-form advance of repeating runs gives exactly the burst-by-burst answers", "[ddr]") {
    for (const char* map : {"row:bank:column:bankgroup", "row:bank:bankgroup:column",
                            "row:column[3]:bank:column:bankgroup", "row:bank:column:rank:bankgroup"}) {
        const std::string set_map = std::string("ddr.controller.address_map=") + map;
        const bool ranked = std::string(map).find("rank") != std::string::npos;
        const DdrConfig d = ranked ? ddr({set_map.c_str(), "ddr.geometry.ranks=2"}) : ddr({set_map.c_str()});
        ChannelTiming fast(d);
        ChannelTiming slow(d);
        slow.set_fast_path(false);
        std::uint64_t state = 12345;
        auto rnd = [&] { // splitmix64
            std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            return z ^ (z >> 31);
        };
        Cycle at = 0;
        for (int i = 0; i < 400; ++i) {
            const auto kind = rnd() % 8;
            const bool write = kind == 7;
            const std::uint64_t len = kind < 2   ? 64
                                      : kind < 4 ? 64 * (1 + rnd() % 20000)
                                      : kind < 6 ? 64 * (1 + rnd() % 200000) // streams of up to 12.8 MB
                                                 : 1 + rnd() % 5000;
            const std::uint64_t addr = rnd() % ((8ull << 30) - len);
            at += rnd() % 4 == 0 ? rnd() % 30000 : rnd() % 50; // idle gaps over refreshes too
            const Direction dir = write ? Direction::Write : Direction::Read;
            StallSplit split_fast, split_slow;
            const Cycle done = fast.access(dir, addr, len, at, &split_fast);
            REQUIRE(done == slow.access(dir, addr, len, at, &split_slow));
            REQUIRE(split_fast == split_slow); // and the same stall split
            REQUIRE(split_fast.total() == done - at);
        }
        CHECK(fast.flush() == slow.flush());
        const auto& a = fast.stats();
        const auto& b = slow.stats();
        CHECK(a.row_hits == b.row_hits);
        CHECK(a.row_misses == b.row_misses);
        CHECK(a.row_conflicts == b.row_conflicts);
        CHECK(a.read_bursts == b.read_bursts);
        CHECK(a.write_bursts == b.write_bursts);
        CHECK(a.refreshes == b.refreshes);
        CHECK(a.turnarounds == b.turnarounds);
        CHECK(a.last_data == b.last_data);
        CHECK(a.read_latency.mean() == b.read_latency.mean());
    }
}

TEST_CASE("no trefi in the documented range livelocks, every burst gets through right above trfc", "[ddr]") {
    // trefi from just above trfc (where a refresh, its precharge and the next ACTIVATE no longer
    // fit in one interval) up to where a burst fits between refreshes, and at the range's top.
    const DdrConfig base = ddr();
    const std::uint64_t trfc = base.timing.trfc;
    std::vector<std::uint64_t> trefis;
    for (std::uint64_t v = trfc + 1; v <= trfc + 80; ++v)
        trefis.push_back(v);
    trefis.push_back(1048575);
    for (auto v : trefis) {
        const std::string key = "ddr.timing.trefi=" + std::to_string(v);
        const DdrConfig d = ddr({key.c_str()});
        ChannelTiming t(d);
        const std::uint64_t bytes = 64 << 10, lines = bytes / 64;
        const Cycle read_end = t.access(Direction::Read, 0, bytes, 0);
        for (std::uint64_t i = 0; i < lines; ++i)
            t.access(Direction::Write, 64 * i, 64, read_end);
        const Cycle end = t.flush();
        INFO("trefi " << v);
        CHECK(t.stats().read_bursts == lines);
        CHECK(t.stats().write_bursts == lines);
        CHECK(end >= read_end);
        // Each burst waits for at most one refresh (then goes, the next postponed behind it).
        CHECK(t.stats().refreshes <= 2 * lines + end / v + 1);
    }
}
