// The continuous-batching scheduler against schedules worked out by hand, with a step cost that is a
// plain function of the rows (1 ms + 0.1 ms a row): admission, decode-first and prefill-first mixing,
// retirement, idle waits for arrivals, slots as the cap, refusals, and the figures of the result.

#include "engine/error.hpp"
#include "serve/metrics.hpp"
#include "serve/scheduler.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>

using namespace cardsim::serve;

namespace {

/// The test's card time of a step of `rows` token rows.
double cost(std::size_t rows) {
    return 1e-3 + 1e-4 * double(rows);
}

/// Runs `s` to the end on the test's cost; returns the steps it gave.
std::vector<Step> drive(Scheduler& s) {
    std::vector<Step> steps;
    double now = 0;
    while (auto step = s.next(now)) {
        const double start = std::max(now, step->not_before_seconds), end = start + cost(step->rows.size());
        std::vector<std::uint32_t> tokens(step->rows.size());
        for (std::size_t i = 0; i < tokens.size(); ++i)
            tokens[i] = 50 + std::uint32_t(step->rows[i].request); // a made-up arg-max
        s.done(start, end, tokens);
        steps.push_back(*step);
        now = end;
        REQUIRE(steps.size() < 10000);
    }
    return steps;
}

Capacity card(std::size_t slots) {
    return Capacity{{1, 2, 4, 8}, slots, 64, 100};
}

} // namespace

TEST_CASE("two requests give the latencies worked out by hand under decode-first") {
    // A at 0: prompt 3, 2 tokens; B at 0.5 ms: prompt 2, 3 tokens; budget 4.
    // step 0 [0, 1.3]: A's prompt (3 rows)            -> A's first token at 1.3 ms
    // step 1 [1.3, 2.6]: A decodes, B's prompt (3 rows) -> A done at 2.6, B's first token at 2.6
    // step 2 [2.6, 3.7]: B decodes (1 row);  step 3 [3.7, 4.8]: B decodes -> B done at 4.8 ms
    Scheduler s({{0, 3, 2, {}}, {0.5e-3, 2, 3, {}}}, Policy{Order::DecodeFirst, 4, 0, 0}, card(4));
    auto steps = drive(s);
    REQUIRE(steps.size() == 4);
    CHECK(steps[0].rows.size() == 3);
    CHECK(steps[1].rows.size() == 3);
    CHECK(steps[1].rows[0].request == 0); // decode first
    CHECK(steps[1].rows[0].position == 3);
    CHECK(steps[1].rows[0].id == 50); // A's first token fed back
    CHECK(steps[0].bucket == 2);      // 3 rows: the bucket of 4
    CHECK(steps[2].bucket == 0);
    auto& a = s.times()[0];
    auto& b = s.times()[1];
    CHECK(a.ttft() == Approx(1.3e-3).epsilon(1e-12));
    CHECK(*a.tpot() == Approx(1.3e-3).epsilon(1e-12));
    CHECK(a.e2e() == Approx(2.6e-3).epsilon(1e-12));
    CHECK(b.ttft() == Approx(2.1e-3).epsilon(1e-12));
    CHECK(*b.tpot() == Approx(1.1e-3).epsilon(1e-12));
    CHECK(b.e2e() == Approx(4.3e-3).epsilon(1e-12));
    CHECK(b.generated == std::vector<std::uint32_t>{51, 51, 51});
    auto sum = summarise(s, steps.size(), 4.8e-3, 8, 0);
    CHECK(sum.served == 2);
    CHECK(sum.output_tokens == 5);
    CHECK(sum.tokens_per_second == Approx(5 / 4.8e-3));
    CHECK(sum.utilisation == Approx(1.0));
    CHECK(sum.limit.largest == 2);
    CHECK(sum.limit.waited == 0);
}

TEST_CASE("prefill-first puts a waiting prompt before the decode rows") {
    Scheduler s({{0, 3, 2, {}}, {0.5e-3, 2, 3, {}}}, Policy{Order::PrefillFirst, 4, 0, 0}, card(4));
    auto steps = drive(s);
    REQUIRE(steps.size() >= 2);
    REQUIRE(steps[1].rows.size() == 3);
    CHECK(steps[1].rows[0].request == 1);
    CHECK(steps[1].rows[2].request == 0);
}

TEST_CASE("a prompt longer than the budget is prefilled in chunks, its rows in position order") {
    Scheduler s({{0, 10, 1, {}}}, Policy{Order::DecodeFirst, 4, 3, 0}, card(2));
    auto steps = drive(s);
    REQUIRE(steps.size() == 4); // chunks of 3, 3, 3, 1
    std::uint32_t p = 0;
    for (auto& st : steps)
        for (auto& r : st.rows)
            CHECK(r.position == p++);
    CHECK(steps.back().rows.back().emits);
    CHECK(s.times()[0].ttft() == Approx(3 * cost(3) + cost(1)));
    CHECK_FALSE(s.times()[0].tpot()); // one token: no time per output token
}

TEST_CASE("the card waits for an arrival, and idle time is not busy time") {
    Scheduler s({{1.0, 2, 2, {}}}, Policy{Order::DecodeFirst, 4, 0, 0}, card(2));
    auto first = s.next(0);
    REQUIRE(first);
    CHECK(first->not_before_seconds == 1.0);
    s.done(1.0, 1.0 + cost(2), {});
    auto second = s.next(1.0 + cost(2));
    REQUIRE(second);
    s.done(1.0 + cost(2), 1.0 + cost(2) + cost(1), {});
    CHECK_FALSE(s.next(2.0));
    CHECK(s.times()[0].ttft() == Approx(cost(2)));
    CHECK(s.times()[0].generated == std::vector<std::uint32_t>{0, 0}); // timing-only: no tokens
}

TEST_CASE("admission stops at the slots and a retired sequence's slot goes to the next request") {
    // Two slots, three requests at 0 with 4 tokens each: the third waits for a slot.
    Scheduler s({{0, 1, 4, {}}, {0, 1, 4, {}}, {0, 1, 4, {}}}, Policy{Order::DecodeFirst, 8, 0, 0}, card(2));
    auto steps = drive(s);
    for (auto& st : steps) {
        std::set<std::uint32_t> slots;
        for (auto& r : st.rows)
            slots.insert(r.slot);
        CHECK(slots.size() <= 2);
        for (auto slot : slots)
            CHECK(slot < 2);
    }
    auto& t = s.times();
    CHECK(t[2].admitted >= std::min(t[0].finished, t[1].finished));
    CHECK(s.limit().largest == 2);
    CHECK(s.limit().cap_reason == "DDR capacity");
    CHECK(s.limit().waited > 0);
    CHECK(summarise(s, steps.size(), 0, 0, 0).limit.text().find("DDR capacity") != std::string::npos);
}

TEST_CASE("a request needing more positions than a slot holds is refused and the rest run") {
    Scheduler s({{0, 60, 10, {}}, {0, 2, 2, {}}}, Policy{Order::DecodeFirst, 4, 0, 0}, card(2));
    drive(s);
    CHECK_FALSE(s.times()[0].refused.empty());
    CHECK(s.times()[0].refused.find("69 positions") != std::string::npos);
    CHECK(s.times()[1].done);
    auto sum = summarise(s, 0, 0, 0, 0);
    CHECK(sum.refused == 1);
    CHECK(sum.served == 1);
}

TEST_CASE("the token budget caps the sequences at once below the slots") {
    Scheduler s({{0, 1, 2, {}}}, Policy{Order::DecodeFirst, 2, 0, 0}, card(8));
    CHECK(s.limit().cap == 2);
    CHECK(s.limit().cap_reason == "token budget");
    CHECK_THROWS_AS(Scheduler({}, Policy{Order::DecodeFirst, 9, 0, 0}, card(8)), cardsim::Error);
    CHECK_THROWS_AS(Scheduler({}, Policy{Order::DecodeFirst, 4, 0, 0}, card(0)), cardsim::Error);
}

TEST_CASE("percentiles are by nearest rank") {
    std::vector<double> v;
    for (int i = 100; i >= 1; --i)
        v.push_back(i);
    auto p = percentiles(v);
    CHECK(p.p50 == 50);
    CHECK(p.p90 == 90);
    CHECK(p.p99 == 99);
    auto q = percentiles({3, 1, 2});
    CHECK(q.p50 == 2);
    CHECK(q.p99 == 3);
    CHECK(percentiles({}).count == 0);
}

TEST_CASE("lanes hold their own sequences, each at most the budget, and idle until an arrival") {
    // Budget 2, two lanes, 8 slots: the cap is 2 × 2. Four requests at 0, one at 5 ms.
    std::vector<Request> requests{
        {0, 1, 3, {}}, {0, 1, 3, {}}, {0, 1, 3, {}}, {0, 1, 3, {}}, {5e-3, 1, 1, {}}};
    Scheduler s(requests, Policy{Order::DecodeFirst, 2, 0, 0}, card(8), 2);
    CHECK(s.limit().cap == 4);
    CHECK(s.limit().cap_reason == "token budget (2 a lane, 2 lanes)");
    CHECK(s.limit().text() ==
          "0 sequences at once, limited by the arrival rate (the token budget (2 a lane, 2 lanes) "
          "allows 4)");
    CHECK_THROWS_AS(s.next(0), cardsim::Error); // a scheduler of lanes is asked lane by lane
    auto a = s.next_in(0, 0);
    auto b = s.next_in(0, 1);
    REQUIRE(a);
    REQUIRE(b);
    std::set<std::size_t> in_a, in_b;
    for (auto& r : a->rows)
        in_a.insert(r.request);
    for (auto& r : b->rows)
        in_b.insert(r.request);
    CHECK(in_a == std::set<std::size_t>{0, 1}); // the lane asked first takes the first arrivals
    CHECK(in_b == std::set<std::size_t>{2, 3});
    CHECK_THROWS_AS(s.next_in(0, 0), cardsim::Error); // lane 0's step is still in flight
    // Both lanes' steps in flight at once; lane 1's rows never appear in lane 0's next step.
    s.done_in(0, 1e-3, std::vector<std::uint32_t>{7, 8});
    auto a2 = s.next_in(1e-3, 0);
    REQUIRE(a2);
    for (auto& r : a2->rows) {
        CHECK(r.request < 2);
        CHECK(r.id == (r.request == 0 ? 7u : 8u)); // the lane's own tokens fed back
    }
    s.done_in(1, 1.5e-3, {});
    s.done_in(0, 2e-3, {});
    // Run both lanes to the end; then the fifth request is still to arrive: every lane idles
    // until 5 ms.
    for (int i = 0; i < 4; ++i)
        for (std::size_t lane : {0u, 1u})
            if (auto st = s.next_in(3e-3, lane)) s.done_in(lane, 3e-3, {});
    CHECK_FALSE(s.next_in(3e-3, 0));
    CHECK_FALSE(s.next_in(3e-3, 1));
    REQUIRE(s.idle_until());
    CHECK(*s.idle_until() == 5e-3);
    auto late = s.next_in(5e-3, 1);
    REQUIRE(late);
    CHECK(late->rows.front().request == 4);
    s.done_in(1, 6e-3, {});
    CHECK_FALSE(s.idle_until()); // every request done
    for (auto& t : s.times())
        CHECK(t.done);
}
