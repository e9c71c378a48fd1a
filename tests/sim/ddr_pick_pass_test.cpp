// FR-FCFS's one-pass pick (`next_request_ranked`: a bank's pick and its switch urgency in one scan
// of the bank's queue) answers exactly what `next_request` and `switch_urgency` answer apart, and
// the request buffer's kept count of a bank's bursts off a row (`off_row`, which lets
// `switch_urgency` answer 0 without a scan) equals the count, on random queues: rows, directions,
// arrivals (in order, as the controller admits), hazards and starvation counts drawn at random,
// bursts entering and leaving. Serving a burst passes over exactly the older bursts it should. The timing
// core's burst target (a shift and a mask per field when every field is one run of bits) equals
// the address map's decode, for maps with whole and split fields. A burst alone in its bank is its
// pick with urgency 0 (what lets the controller skip the scheduler for it).

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_timing.hpp"
#include "sim/memory/request_buffer.hpp"
#include "sim/memory/scheduler_frfcfs.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

namespace {

using namespace cardsim::sim::memory;

/// Bursts of `bank` in another row than `row`, counted along the bank's queue.
std::uint32_t pick_pass_off_row(const RequestBuffer& buffer, std::uint32_t bank, std::uint32_t row) {
    std::uint32_t n = 0;
    for (const std::int32_t i : buffer.in_bank(bank))
        n += buffer[i].row != row ? 1 : 0;
    return n;
}

} // namespace

TEST_CASE("FR-FCFS's one-pass pick and urgency equal its pick and urgency apart on random queues", "[ddr]") {
    constexpr std::uint32_t banks = 4, depth = 16, writes = 8, limit = 10;
    // Mixed queues (both directions, hazards, bursts not yet visible), and queues of reads alone
    // with no hazard, mostly all visible (the pass that skips its tests a burst).
    for (const bool mixed : {true, false})
        for (const std::uint32_t horizon : {0u, 1u, 3u}) {
            RequestBuffer buffer(banks, depth, writes);
            SchedulerFrFcfs scheduler(buffer, limit, 32, 0, horizon);
            std::mt19937_64 rng(horizon + (mixed ? 1 : 17));
            const auto draw = [&rng](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
            std::vector<std::int32_t> held;
            std::uint64_t seq = 0;
            int uniform = 0;
            Cycle clock = 0;
            for (int round = 0; round < 20000; ++round) {
                // Bursts enter (when they fit) or leave, at random.
                if (held.empty() || draw(3) != 0) {
                    QueuedBurst q;
                    q.bank = draw(banks);
                    q.row = draw(4);
                    q.direction = mixed && draw(3) == 0 ? Direction::Write : Direction::Read;
                    q.accept = clock; // admission is in order
                    clock += draw(2);
                    q.passed = draw(limit + 3);
                    q.seq = seq++;
                    if (buffer.has_space(q.bank, q.direction)) {
                        const std::int32_t i = buffer.push(q);
                        if (mixed && !held.empty() && draw(8) == 0)
                            buffer.block(i, held[draw(static_cast<std::uint32_t>(held.size()))]);
                        held.push_back(i);
                    }
                } else {
                    const std::size_t k = draw(static_cast<std::uint32_t>(held.size()));
                    buffer.erase(held[k]);
                    held[k] = held.back();
                    held.pop_back();
                }
                BankMachine bm;
                bm.bank = draw(banks);
                bm.open = draw(4) != 0;
                bm.row = draw(4);
                bm.decision = clock - std::min<Cycle>(clock, draw(mixed ? 16 : 4));
                bm.direction = mixed && draw(3) == 0 ? Direction::Write : Direction::Read;
                std::uint32_t urgency = ~0u;
                const std::int32_t entry = scheduler.next_request_ranked(bm, urgency);
                REQUIRE(entry == scheduler.next_request(bm));
                REQUIRE(urgency == (entry == RequestBuffer::none ? 0 : scheduler.switch_urgency(bm, entry)));
                REQUIRE(buffer.off_row(bm.bank, bm.row) == pick_pass_off_row(buffer, bm.bank, bm.row));
                // A burst alone in its bank, of the direction and not blocked, visible at the decision
                // (the controller's decision is never before it entered): the pick, urgency 0, which
                // the controller takes without asking (`picks_sole_burst`).
                const std::int32_t sole = buffer.oldest_in_bank(bm.bank);
                if (sole != RequestBuffer::none && sole == buffer.youngest_in_bank(bm.bank) &&
                    buffer[sole].direction == bm.direction && buffer[sole].blocker == RequestBuffer::none &&
                    buffer[sole].accept <= bm.decision) {
                    REQUIRE(scheduler.picks_sole_burst());
                    REQUIRE(entry == sole);
                    REQUIRE(urgency == 0);
                }
                // Serving a burst passes over each older burst of its bank in its direction that is
                // not blocked, and no other burst.
                if (!held.empty() && draw(4) == 0) {
                    const std::int32_t s = held[draw(static_cast<std::uint32_t>(held.size()))];
                    std::vector<std::uint32_t> before(held.size());
                    for (std::size_t k = 0; k < held.size(); ++k)
                        before[k] = buffer[held[k]].passed;
                    scheduler.served(s);
                    for (std::size_t k = 0; k < held.size(); ++k) {
                        const QueuedBurst& e = buffer[held[k]];
                        const bool passed_over = e.bank == buffer[s].bank && e.seq < buffer[s].seq &&
                                                 e.direction == buffer[s].direction &&
                                                 e.blocker == RequestBuffer::none;
                        REQUIRE(e.passed == before[k] + (passed_over ? 1 : 0));
                    }
                }
                // How often the bank's bursts were all of the direction, unblocked and visible.
                const std::int32_t young = buffer.youngest_in_bank(bm.bank);
                if (young != RequestBuffer::none && young != buffer.oldest_in_bank(bm.bank) &&
                    buffer.queued(bm.bank, Direction::Write) == 0 && buffer.blocked(Direction::Read) == 0 &&
                    bm.direction == Direction::Read && buffer[young].accept <= bm.decision)
                    ++uniform;
            }
            // The pass over a bank of one direction, unblocked and visible, was weighed many times.
            if (!mixed) REQUIRE(uniform > 1000);
        }
}

TEST_CASE("FR-FCFS picks a burst alone in its bank with urgency 0", "[ddr]") {
    // What lets the controller take a bank's sole burst as its pick without asking the scheduler.
    constexpr std::uint32_t limit = 10;
    std::mt19937_64 rng(11);
    const auto draw = [&rng](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
    for (const std::uint32_t horizon : {0u, 1u, 3u}) {
        RequestBuffer buffer(4, 16, 8);
        const SchedulerFrFcfs scheduler(buffer, limit, 32, 0, horizon);
        REQUIRE(scheduler.picks_sole_burst());
        for (int round = 0; round < 2000; ++round) {
            QueuedBurst q;
            q.bank = draw(4);
            q.row = draw(4);
            q.direction = draw(2) == 0 ? Direction::Write : Direction::Read;
            q.accept = draw(20);
            q.passed = draw(limit + 3);
            const std::int32_t i = buffer.push(q);
            BankMachine bm;
            bm.bank = q.bank;
            bm.open = draw(4) != 0;
            bm.row = draw(4);
            bm.decision = q.accept + draw(8); // never before it entered, as the controller decides
            bm.direction = q.direction;
            std::uint32_t urgency = ~0u;
            REQUIRE(scheduler.next_request_ranked(bm, urgency) == i);
            REQUIRE(urgency == 0);
            REQUIRE(scheduler.next_request(bm) == i);
            buffer.erase(i);
        }
    }
}

TEST_CASE("the timing core's burst target equals the address map's decode for every map", "[ddr]") {
    for (const char* map :
         {"row:bank:column:bankgroup", "row:bank:bankgroup:column", "row:column:bank:bankgroup",
          "row:bank[1]:column:bank[1]:bankgroup", "column[3]:row:bank:column:bankgroup"}) {
        for (const char* ranks : {"1", "2"}) {
            const std::vector<cardsim::card::Override> set{{"ddr.controller.address_map", map},
                                                           {"ddr.geometry.ranks", ranks}};
            const cardsim::card::DdrConfig ddr = cardsim::card::load_card_config({}, set).ddr;
            const ChannelTiming core(ddr);
            const cardsim::card::AddressMap& m = core.address_map();
            const std::uint64_t lines = ddr.channel_bytes() >> m.burst_shift();
            std::mt19937_64 rng(7);
            for (int k = 0; k < 20000; ++k) {
                const std::uint64_t line = k < 1000 ? static_cast<std::uint64_t>(k) : rng() % lines;
                const cardsim::card::DramCoord c = m.decode_burst(line);
                const BurstTarget t = core.target(line);
                INFO(map << " ranks " << ranks << " line " << line);
                REQUIRE(t.group == c.bank_group);
                REQUIRE(t.rank == c.rank);
                REQUIRE(t.row == c.row);
                REQUIRE(t.bank ==
                        c.rank * ddr.geometry.banks() + c.bank_group * ddr.geometry.banks_per_group + c.bank);
            }
        }
    }
}
