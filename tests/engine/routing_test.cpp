// Routing models for runs without the router's data (engine/graph/routing.hpp).

#include "engine/error.hpp"
#include "engine/graph/routing.hpp"

#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>

#include <cmath>
#include <set>

using namespace cardsim;
using graph::RouterShape;
using graph::RoutingModel;

TEST_CASE("uniform routing: distinct experts a step match E(1 - (1 - k/E)^B) within the sampling bound",
          "[engine][routing]") {
    // E = 128, k = 8 (Qwen3-30B-A3B): 8, 29.1, 82.4, 125.9 distinct at B = 1, 4, 16, 64.
    const std::size_t E = 128, k = 8, samples = 2000;
    const RouterShape shape{E, k};
    const auto model = RoutingModel::parse("uniform", 11);
    for (std::size_t B : {1, 4, 16, 64}) {
        double sum = 0;
        for (std::size_t s = 0; s < samples; ++s) {
            const auto step = model.step(s, std::span(&shape, 1), B);
            REQUIRE(step.size() == 1);
            REQUIRE(step[0].size() == B * k);
            for (std::size_t q = 0; q < B; ++q) { // each row's k experts are distinct and in range
                std::set<std::uint32_t> row(step[0].begin() + std::ptrdiff_t(q * k),
                                            step[0].begin() + std::ptrdiff_t((q + 1) * k));
                REQUIRE(row.size() == k);
                REQUIRE(*row.rbegin() < E);
            }
            sum += double(graph::distinct_experts(step[0]));
        }
        const double mean = sum / double(samples);
        const double expected = double(E) * (1.0 - std::pow(1.0 - double(k) / double(E), double(B)));
        // The bound: the touched-expert indicators are negatively correlated (rows choose
        // independently, each a k-subset), so Var(distinct) <= E/4; five standard errors of the mean.
        const double bound = 5.0 * std::sqrt(double(E) / 4.0 / double(samples));
        INFO("B = " << B << ": mean " << mean << ", expected " << expected << ", bound " << bound);
        CHECK(std::abs(mean - expected) <= bound);
    }
}

TEST_CASE("skewed routing touches fewer experts than uniform, and more skew fewer still",
          "[engine][routing]") {
    const RouterShape shape{128, 8};
    auto distinct = [&](const std::string& spec) {
        const auto model = RoutingModel::parse(spec, 5);
        double sum = 0;
        for (std::size_t s = 0; s < 200; ++s)
            sum += double(graph::distinct_experts(model.step(s, std::span(&shape, 1), 16)[0]));
        return sum / 200;
    };
    const double uniform = distinct("uniform"), mild = distinct("skew:0.5"), strong = distinct("skew:1.5");
    CHECK(mild < uniform);
    CHECK(strong < mild);
    CHECK(distinct("skew:0") == Approx(uniform).epsilon(0.02)); // exponent 0: every expert alike
}

TEST_CASE("routing models are deterministic and a routing trace reads back what it wrote",
          "[engine][routing]") {
    const std::vector<RouterShape> shapes{{8, 2}, {16, 4}};
    const auto a = RoutingModel::parse("skew:1.2", 3), b = RoutingModel::parse("skew:1.2", 3);
    graph::RoutingTrace trace;
    for (std::size_t s = 0; s < 3; ++s) {
        auto step = a.step(s, shapes, 5);
        REQUIRE(step == b.step(s, shapes, 5));
        trace.push_back(std::move(step));
    }
    REQUIRE(trace[0] != trace[1]); // steps differ
    const auto text = graph::routing_text(trace, shapes);
    CHECK(text.starts_with("cardsim-routing 1\n"));
    CHECK(graph::parse_routing(text, "t") == trace);
}

TEST_CASE("bad routing input is an error naming the file, the line and what was expected",
          "[engine][routing]") {
    CHECK_THROWS_WITH(RoutingModel::parse("zipf"), Catch::Contains("expected uniform, skew:S or trace:FILE"));
    CHECK_THROWS_WITH(RoutingModel::parse("skew:-1"), Catch::Contains("S a number >= 0"));
    CHECK_THROWS_WITH(RoutingModel::parse("trace:/nonexistent/r.txt"), Catch::Contains("/nonexistent/r.txt"));
    CHECK_THROWS_WITH(graph::parse_routing("routing\n", "r.txt"),
                      Catch::Contains("r.txt:1: expected the header"));
    CHECK_THROWS_WITH(graph::parse_routing("cardsim-routing 1\n0 0 0 1 2\n", "r.txt"),
                      Catch::Contains("r.txt:2: expected `STEP ROUTER ROW: EXPERTS...`"));
    CHECK_THROWS_WITH(graph::parse_routing("cardsim-routing 1\n1 0 0: 1 2\n", "r.txt"),
                      Catch::Contains("r.txt:2: step 1 follows step none"));
    CHECK_THROWS_WITH(graph::parse_routing("cardsim-routing 1\n0 0 0: 1 x\n", "r.txt"),
                      Catch::Contains("`x` is not a whole number (expected the expert)"));
    // A trace that does not match the run: named by file, step and router.
    test::ScratchDir d("routing-bad");
    const auto file = d / "r.txt";
    std::ofstream(file) << "cardsim-routing 1\n0 0 0: 1 9\n";
    const auto model = RoutingModel::parse("trace:" + file.string());
    const std::vector<RouterShape> shapes{{8, 2}};
    CHECK_THROWS_WITH(model.step(0, shapes, 1), Catch::Contains(file.string()) &&
                                                    Catch::Contains("step 0 router 0 chooses expert 9 of 8"));
    CHECK_THROWS_WITH(model.step(0, shapes, 2), Catch::Contains("the run needs 2 rows of 2"));
    CHECK_THROWS_WITH(model.step(1, shapes, 1),
                      Catch::Contains("the run needs step 1, the trace has 1 steps"));
}
