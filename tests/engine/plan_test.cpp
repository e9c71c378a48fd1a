// Pipeline-parallel plans: the cards' parts cover the graph in order, cut between layers where the
// residual stream alone crosses, balanced by weights; each card's program holds its part's
// weights and stores only.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/plan.hpp"
#include "tests/support/graph_weights.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

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

TEST_CASE("a plan is spelled one, pp, tp, tp×pp or tpT×ppP (ep for tp with experts split by index), and "
          "its split makes the system's cards") {
    REQUIRE(lower::parse_plan("pp", 4) == lower::Plan{1, 4});
    REQUIRE(lower::parse_plan("tp", 4) == lower::Plan{4, 1});
    REQUIRE(lower::parse_plan("one", 1) == lower::Plan{1, 1});
    REQUIRE(lower::parse_plan("tp×pp", 4) == lower::Plan{2, 2});
    REQUIRE(lower::parse_plan("tpxpp", 8) == lower::Plan{2, 4});
    REQUIRE(lower::parse_plan("tp4×pp2", 8) == lower::Plan{4, 2});
    REQUIRE(lower::name(lower::Plan{4, 2}) == "tp4xpp2");
    REQUIRE(lower::name(lower::Plan{1, 3}) == "pp");
    REQUIRE(lower::parse_plan("ep", 4) == lower::Plan{4, 1, true});
    REQUIRE(lower::parse_plan("ep×pp", 4) == lower::Plan{2, 2, true});
    REQUIRE(lower::parse_plan("ep2xpp3", 6) == lower::Plan{2, 3, true});
    REQUIRE(lower::name(lower::Plan{2, 3, true}) == "ep2xpp3");
    REQUIRE(lower::name(lower::Plan{4, 1, true}) == "ep");
    REQUIRE(lower::spells_plan("ep4×pp2"));
    REQUIRE_THROWS_WITH(lower::parse_plan("ep1×pp4", 4), Catch::Contains("groups of 2 cards or more"));
    REQUIRE_THROWS_WITH(lower::parse_plan("tp×pp", 2), Catch::Contains("even system.cards of 4 or more"));
    REQUIRE_THROWS_WITH(lower::parse_plan("tp4×pp2", 6),
                        Catch::Contains("4 × 2 cards, and system.cards = 6"));
    REQUIRE_THROWS_WITH(lower::parse_plan("tpp", 4), Catch::Contains("expected one"));
    REQUIRE_THROWS_WITH(lower::parse_plan("tp×pp×ep", 4), Catch::Contains("expected one"));
}

TEST_CASE("tp×pp puts each stage's group on neighbouring cards, snaking so that each rank's stages are "
          "neighbours on a ring of 2 × P cards") {
    const lower::Plan p{2, 3};
    // Stage 0: cards 0, 1; stage 1: 3, 2; stage 2: 4, 5.
    REQUIRE(lower::card_of(p, 0, 0) == 0);
    REQUIRE(lower::card_of(p, 0, 1) == 1);
    REQUIRE(lower::card_of(p, 1, 0) == 3);
    REQUIRE(lower::card_of(p, 1, 1) == 2);
    REQUIRE(lower::card_of(p, 2, 0) == 4);
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    const graph::Graph* one = &g;
    // Tensor 1: the plan's stages are the pipeline's.
    auto pp = lower::system_stages(std::span(&one, 1), w, lower::Plan{1, 3});
    auto plain = lower::pipeline_stages(g, w, 3);
    for (std::size_t k = 0; k < 3; ++k) {
        REQUIRE(pp[k].first_op == plain[k].first_op);
        REQUIRE(pp[k].from == plain[k].from);
        REQUIRE(pp[k].to == plain[k].to);
        REQUIRE(pp[k].receives == plain[k].receives);
        REQUIRE(pp[k].outputs == (k == 2));
        REQUIRE(pp[k].group.empty());
    }
    // Two ranks of the same graph: every card's stage, in card order, its group and neighbours.
    const graph::Graph* two[] = {&g, &g};
    auto st = lower::system_stages(two, w, p);
    REQUIRE(st.size() == 6);
    for (std::size_t k = 0; k < 6; ++k) {
        REQUIRE(st[k].card == k);
        REQUIRE(st[k].group.size() == 2);
        REQUIRE(st[k].group[st[k].rank] == k);
    }
    REQUIRE(st[3].rank == 0);
    REQUIRE(st[3].from == 0);
    REQUIRE(st[3].to == 4);
    REQUIRE(st[5].outputs);
    REQUIRE(std::count_if(st.begin(), st.end(), [](auto& s) { return s.outputs; }) == 1);
}
