// Pipeline-parallel plans: the cards' parts cover the graph in order, cut between layers where the
// residual stream alone crosses, balanced by weights; each card's program holds its part's
// weights and stores only.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/plan.hpp"
#include "tests/support/graph_weights.hpp"

#include <catch2/catch.hpp>

using namespace cardsim;

namespace {
const graph::DecoderShape shape{6, 128, 4, 2, 32, 256, 300};
}

TEST_CASE("a pipeline's parts cover every op once, in order, cut where the residual stream alone crosses") {
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    for (std::size_t cards : {2, 3, 4, 6}) {
        auto stages = lower::pipeline_stages(g, w, cards);
        REQUIRE(stages.size() == cards);
        REQUIRE(stages.front().first_op == 0);
        REQUIRE(stages.back().end_op == g.ops.size());
        std::uint64_t total = 0, most = 0;
        for (std::size_t k = 0; k < cards; ++k) {
            REQUIRE(stages[k].first_op < stages[k].end_op);
            if (k) REQUIRE(stages[k].first_op == stages[k - 1].end_op);
            // One value crosses each cut (the residual stream), sent by one card and received by the next.
            if (k) {
                REQUIRE(stages[k].receives.size() == 1);
                REQUIRE(stages[k].receives == stages[k - 1].sends);
                REQUIRE(g.sites[stages[k].first_op].layer);
            }
            total += stages[k].weight_elements;
            most = std::max(most, stages[k].weight_elements);
        }
        REQUIRE(stages.back().sends.empty());
        REQUIRE(stages.front().receives.empty());
        // Balanced by weights: no card holds more than its share plus one layer and the head's
        // and embedding's matrices (the parts are whole layers).
        const std::uint64_t layer = std::uint64_t(shape.hidden) * (2 * shape.heads * shape.head_dim +
                                                                   2 * shape.kv_heads * shape.head_dim) +
                                    3 * std::uint64_t(shape.hidden) * shape.intermediate;
        const std::uint64_t ends = std::uint64_t(shape.vocab) * shape.hidden;
        INFO(cards << " cards: " << most << " of " << total);
        REQUIRE(most <= total / cards + layer + ends);
    }
    REQUIRE_THROWS_WITH(lower::pipeline_stages(g, w, 8), Catch::Contains("the model has 6 places to cut"));
}

TEST_CASE(
    "each card of a pipeline holds its own layers' weights and caches, which add up to the one card's") {
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    auto config = card::default_card_config();
    lower::Options o(graph::Bucket{1, 1, 0}, 64);
    const auto one = lower::capacity(g, w, lower::target_of(config), o);
    const auto stages = lower::pipeline_stages(g, w, 3);
    const auto caps = lower::stage_capacity(g, w, lower::target_of(config), o, stages);
    REQUIRE(caps.size() == 3);
    std::uint64_t weights = 0, caches = 0;
    for (auto& c : caps) {
        REQUIRE(c.weights < one.weights);
        REQUIRE(c.caches < one.caches);
        weights += c.weights;
        caches += c.caches;
    }
    // Each region rounds up to a stripe on each card; the lm head and the embedding are apart.
    REQUIRE(weights >= one.weights);
    REQUIRE(weights <= one.weights + 3 * lower::target_of(config).stripe());
    REQUIRE(caches >= one.caches);
    REQUIRE(caches <= one.caches + 3 * lower::target_of(config).stripe());
}

TEST_CASE("a plan is spelled pp, tp or one, and tp×pp is refused as not built") {
    REQUIRE(lower::parse_plan("pp") == lower::Plan::Pipeline);
    REQUIRE(lower::parse_plan("tp") == lower::Plan::Tensor);
    REQUIRE(lower::parse_plan("one") == lower::Plan::One);
    REQUIRE_THROWS_WITH(lower::parse_plan("tp×pp"), Catch::Contains("not built yet"));
}
