// A lowered decoder step on the simulated card: outputs read back from modelled DDR equal the
// golden executor's bit for bit over several steps; timing-only runs give the same cycles.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/lower.hpp"
#include "sim/card/simulation.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/in_child.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;

namespace {

const graph::DecoderShape shape{2, 128, 4, 2, 32, 256, 300};
const graph::Bucket bucket{2, 2, 0};
constexpr std::size_t steps = 4, max_positions = 16;

/// Step `s`'s inputs: other tokens each step, at position s.
graph::BatchInputs inputs(std::size_t s) {
    auto t = std::uint32_t(s);
    return graph::BatchInputs{{5 + 11 * t, 77 + 3 * t}, {t, t}, {}, {}, {}, {}, {}, {}};
}

sim::RunResult run(const card::CardConfig& config, const lower::Compiled& c, sim::Mode mode) {
    sim::RunPlan plan;
    plan.steps = steps;
    plan.mode = mode;
    plan.inputs = [](std::size_t s, const sim::StepOutputs*) { return inputs(s); };
    return sim::simulate(config, c, plan);
}

} // namespace

TEST_CASE("a decoder's outputs read back from the card equal the golden executor's bit for bit") {
    auto config = card::default_card_config();
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    auto compiled = lower::lower(g, w, lower::target_of(config), lower::Options{bucket, max_positions});
    auto r = run(config, compiled, sim::Mode::Full);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.outputs.size() == steps);
    golden::Golden gold(g, w, config, bucket, max_positions);
    for (std::size_t s = 0; s < steps; ++s) {
        gold.step(inputs(s));
        for (std::size_t o = 0; o < compiled.io.outputs.size(); ++o) {
            auto v = compiled.io.outputs[o].first;
            auto& expect = gold.value(v);
            auto& got = r.outputs[s].values[o];
            INFO("step " << s << ", output " << g.names[v.id]);
            REQUIRE(got.size() == 4 * expect.size());
            REQUIRE(std::memcmp(got.data(), expect.data(), got.size()) == 0);
        }
    }
    // The run never beats its DDR roofline: its bytes over the peak of every channel.
    std::uint64_t bytes = 0;
    for (auto& ch : r.channels)
        bytes += ch.read_bytes + ch.write_bytes;
    REQUIRE(r.seconds >= double(bytes) / (config.ddr.channels * config.ddr.channel_peak_bytes_per_second()));
    // The steps really differ (the caches grow), so equality above is not vacuous.
    REQUIRE(r.outputs[0].values[0] != r.outputs[3].values[0]);
    REQUIRE(r.step_end[3] > r.step_end[2]);
}

TEST_CASE("a timing-only run gives the same cycles for every command as the full run") {
    auto config = card::default_card_config();
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    auto compiled = lower::lower(g, w, lower::target_of(config), lower::Options{bucket, max_positions});
    auto cycles_of = [](const sim::RunResult& r) {
        std::vector<std::uint64_t> v;
        for (auto& rec : r.records)
            v.insert(v.end(), {rec.start, rec.end});
        v.push_back(r.cycles);
        return v;
    };
    auto timing = test::in_child([&] { return cycles_of(run(config, compiled, sim::Mode::TimingOnly)); });
    auto full = run(config, compiled, sim::Mode::Full);
    REQUIRE_FALSE(full.fault);
    REQUIRE(cycles_of(full) == timing);
}
