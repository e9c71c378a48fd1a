// The FR-FCFS controller's fast ranking (each pick's bound split into its bank's part, kept until
// the bank changes, and its group's part; a decision kept across admissions updated with the
// touched banks only) chooses exactly what ranking every pick's whole plan afresh chooses: every
// request of every standard pattern completes at the same cycle with the same stall split, under
// the queued port and blocking transport, with one rank and two, and the timing core's split of
// the bound equals the whole bound in every state.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_controller.hpp"
#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/trace_patterns.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <random>
#include <string>
#include <vector>

namespace {

using namespace cardsim::sim::memory;
using cardsim::card::DdrConfig;

DdrConfig ddr(std::vector<std::string> sets = {}) {
    std::vector<cardsim::card::Override> o;
    for (auto& s : sets)
        o.push_back(cardsim::card::parse_override(s));
    return cardsim::card::load_card_config({}, o).ddr;
}

/// What a replay produced: every completion in the order the memory handed them over, and each
/// channel's counters.
struct Outcome {
    std::vector<MemCompletion> done;
    std::vector<std::uint64_t> counters;
};

/// Replays `spec` through `memory`'s queued port as `cardsim ddr replay` does (closed pacing,
/// `outstanding` in flight), with every controller ranking exhaustively or not.
Outcome replay(DdrMemory& memory, const DdrConfig& d, const PatternSpec& spec, bool exhaustive,
               std::uint32_t outstanding = 64) {
    memory.reset(0);
    for (std::uint32_t c = 0; c < memory.channels(); ++c)
        memory.channel(c).controller().set_exhaustive_ranking(exhaustive);
    PatternGenerator gen(spec, MemoryClock(d.speed_mts));
    Outcome out;
    MemRequest r;
    MemCompletion c;
    Cycle previous = 0;
    std::uint64_t pending = 0, index = 0;
    while (gen.next(r)) {
        Cycle arrival = previous;
        if (pending == outstanding && memory.next_completion(c)) {
            out.done.push_back(c);
            --pending;
            arrival = std::max(arrival, c.done);
        }
        previous = arrival;
        REQUIRE(memory.submit(r, arrival, index++) == tlm::TLM_OK_RESPONSE);
        ++pending;
    }
    while (memory.next_completion(c))
        out.done.push_back(c);
    out.counters.push_back(memory.flush());
    for (std::uint32_t i = 0; i < memory.channels(); ++i) {
        const ChannelStats& st = memory.channel(i).controller().stats();
        for (std::uint64_t v :
             {st.row_hits, st.row_misses, st.row_conflicts, st.refreshes, st.turnarounds, st.rank_switches,
              st.write_batches, std::uint64_t{st.max_passed}, st.last_data})
            out.counters.push_back(v);
    }
    return out;
}

/// Both rankings on `spec`; every completion must agree.
void same_choices(DdrMemory& memory, const DdrConfig& d, const PatternSpec& spec, const std::string& label) {
    const Outcome fast = replay(memory, d, spec, false);
    const Outcome exhaustive = replay(memory, d, spec, true);
    INFO(label);
    REQUIRE(fast.done.size() == exhaustive.done.size());
    REQUIRE(fast.done.size() == spec.count);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < fast.done.size(); ++i) {
        const MemCompletion &a = fast.done[i], &b = exhaustive.done[i];
        if (a.tag != b.tag || a.arrival != b.arrival || a.done != b.done ||
            a.split.queueing != b.split.queueing || a.split.bank != b.split.bank ||
            a.split.refresh != b.split.refresh || a.split.turnaround != b.split.turnaround ||
            a.split.data != b.split.data)
            ++differ;
    }
    CHECK(differ == 0);
    CHECK(fast.counters == exhaustive.counters);
    fmt::print("{:<40} {} requests, end at cycle {}: identical\n", label, fast.done.size(), fast.counters[0]);
}

/// The standard patterns of `cardsim ddr gen` over `span` bytes, `count` requests each.
std::vector<std::pair<std::string, PatternSpec>> patterns(std::uint64_t span, std::uint64_t count) {
    std::vector<std::pair<std::string, PatternSpec>> all;
    auto add = [&](std::string name, PatternKind kind, auto&& tweak) {
        PatternSpec s;
        s.kind = kind;
        s.count = count;
        s.span = span;
        tweak(s);
        all.emplace_back(std::move(name), s);
    };
    add("sequential", PatternKind::Sequential, [](PatternSpec&) {});
    add("random", PatternKind::Random, [](PatternSpec&) {});
    add("4 streams, same banks", PatternKind::Streams, [](PatternSpec&) {});
    add("4 streams, own banks", PatternKind::Streams,
        [](PatternSpec& s) { s.spacing = (s.span / 4) + (129ull << 10); });
    add("2:1 mix", PatternKind::Mix, [](PatternSpec& s) {
        s.reads = 2;
        s.writes = 1;
    });
    add("random 1:1 read/write, 256 B", PatternKind::Random, [](PatternSpec& s) {
        s.reads = 1;
        s.writes = 1;
        s.size = 256;
    });
    return all;
}

} // namespace

TEST_CASE("the fast ranking completes every request of every pattern when exhaustive ranking does",
          "[ddr][scheduler]") {
    struct Case {
        const char* name;
        std::vector<std::string> sets;
        std::uint64_t span;
    };
    const std::vector<Case> cases = {
        {"four channels", {}, 1ull << 30},
        {"one channel", {"ddr.channels=1"}, 8ull << 30},
        {"one channel, two ranks", {"ddr.channels=1", "ddr.geometry.ranks=2"}, 8ull << 30},
        {"one channel, map row:bank:bankgroup:column",
         {"ddr.channels=1", "ddr.controller.address_map=row:bank:bankgroup:column"},
         8ull << 30},
        {"one channel, watermarks 24/8",
         {"ddr.channels=1", "ddr.controller.write_high_watermark=24", "ddr.controller.write_low_watermark=8"},
         8ull << 30},
    };
    for (const Case& c : cases) {
        const DdrConfig d = ddr(c.sets);
        DdrMemory memory(fmt::format("ddr_{}", &c - cases.data()).c_str(), d);
        for (const auto& [name, spec] : patterns(c.span, 20000))
            same_choices(memory, d, spec, fmt::format("{}: {}", c.name, name));
    }
}

TEST_CASE("the fast ranking serves blocking transport exactly as exhaustive ranking does",
          "[ddr][scheduler]") {
    for (const char* ranks : {"ddr.geometry.ranks=1", "ddr.geometry.ranks=2"}) {
        const DdrConfig d = ddr({"ddr.channels=1", ranks});
        ChannelController fast(d), exhaustive(d);
        exhaustive.set_exhaustive_ranking(true);
        std::mt19937_64 rng(7);
        Cycle now = 0;
        std::size_t differ = 0;
        std::uint64_t cursor = 0; // half the requests continue a stream, half go anywhere
        for (int i = 0; i < 20000; ++i) {
            now += rng() % 40;
            const Direction dir = rng() % 3 == 0 ? Direction::Write : Direction::Read;
            const std::uint64_t length = 64ull << (rng() % 4);
            if (rng() % 2 == 0 || cursor + length > (8ull << 30))
                cursor = (rng() % ((8ull << 30) / 512)) * 512;
            const std::uint64_t address = cursor;
            cursor += length;
            StallSplit a, b;
            const Cycle x = fast.access(dir, address, length, now, &a);
            const Cycle y = exhaustive.access(dir, address, length, now, &b);
            if (x != y || a.total() != b.total() || a.bank != b.bank || a.queueing != b.queueing) ++differ;
        }
        CHECK(differ == 0);
        CHECK(fast.flush() == exhaustive.flush());
        CHECK(fast.stats().row_hits == exhaustive.stats().row_hits);
        CHECK(fast.stats().row_conflicts == exhaustive.stats().row_conflicts);
    }
}

TEST_CASE("a burst's bound is its bank's part or its group's part, whichever is later", "[ddr]") {
    for (const char* ranks : {"ddr.geometry.ranks=1", "ddr.geometry.ranks=2"}) {
        const DdrConfig d = ddr({"ddr.channels=1", ranks});
        ChannelTiming core(d);
        std::mt19937_64 rng(11);
        std::size_t checked = 0, differ = 0;
        Cycle ready = 0;
        for (int i = 0; i < 5000; ++i) {
            // Commit a random burst (a few rows per bank, both directions), then check every bank.
            const std::uint64_t line = (rng() % 64) | ((rng() % 4) << 20);
            const BurstTarget t = core.target(line * 131 % (core.capacity() / 64));
            const bool write = rng() % 4 == 0;
            ready += rng() % 8;
            core.commit(core.plan(t, write, ready), t, write);
            for (std::uint32_t b = 0; b < core.banks(); ++b)
                for (bool w : {false, true}) {
                    BurstTarget probe = t;
                    probe.bank = b;
                    probe.rank = b / (core.banks() / core.ranks());
                    probe.group = (b % (core.banks() / core.ranks())) / d.geometry.banks_per_group;
                    probe.row = static_cast<std::uint32_t>(rng() % 3 == 0 ? core.open_row(b) : rng() % 8);
                    const Cycle at = ready + rng() % 64;
                    bool hit = false;
                    const Cycle own = core.bank_floor(probe, at, hit);
                    const Cycle split = std::max(own, core.group_floor(probe.rank, probe.group, w, hit));
                    if (split != core.earliest_cas(probe, w, at)) ++differ;
                    CHECK(hit == core.row_open(b, probe.row));
                    ++checked;
                }
        }
        CHECK(differ == 0);
        CHECK(checked > 0);
    }
}
