// A prefill chunk: one step of several tokens of one sequence gives, at its last row, the very
// logits of feeding the same tokens one step each (caches, convolution windows and delta-rule
// states taken row after row), bit for bit, and equals the golden executor.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;

namespace {

const std::vector<std::uint32_t> prompt{1, 17, 42, 7, 3, 9, 11, 5};
constexpr std::size_t chunk = 4, positions = 8;

/// The index of the logits in the io map.
std::size_t logits_output(const lower::Compiled& c, const graph::Graph& g) {
    for (std::size_t o = 0; o < c.io.outputs.size(); ++o)
        if (c.io.outputs[o].first == g.logits) return o;
    FAIL("no logits output");
    return 0;
}

/// The last prompt token's logits (bit patterns) when the prompt runs in steps of `tokens` rows,
/// each step checked against the golden executor.
std::vector<std::uint64_t> last_logits(const models::Model& m, std::size_t tokens) {
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    auto& g = built.graph;
    const graph::Bucket bucket{tokens, 1, 0};
    auto c = lower::lower(g, m.checkpoint, lower::target_of(config), lower::Options{bucket, positions});
    auto in = [&](std::size_t s) {
        graph::BatchInputs b;
        for (std::size_t i = 0; i < tokens; ++i) {
            b.ids.push_back(prompt[s * tokens + i]);
            b.positions.push_back(std::uint32_t(s * tokens + i));
        }
        b.seq_starts = {0, std::uint32_t(tokens)};
        return b;
    };
    sim::RunPlan plan;
    plan.steps = prompt.size() / tokens;
    plan.inputs = [&](std::size_t s, const sim::StepOutputs*) { return in(s); };
    auto r = sim::simulate(config, c, plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.outputs.size() == plan.steps);
    golden::Golden gold(g, m.checkpoint, config, bucket, positions);
    const auto lo = logits_output(c, g);
    for (std::size_t s = 0; s < plan.steps; ++s) {
        gold.step(in(s));
        auto& expect = gold.value(*g.logits);
        auto& got = r.outputs[s].values[lo];
        REQUIRE(got.size() == 4 * expect.size());
        REQUIRE(std::memcmp(got.data(), expect.data(), got.size()) == 0);
    }
    auto& last = r.outputs.back().values[lo];
    const std::size_t vocab = last.size() / 4 / tokens;
    std::vector<std::uint64_t> bits(vocab);
    for (std::size_t v = 0; v < vocab; ++v) {
        std::uint32_t b = 0;
        std::memcpy(&b, last.data() + 4 * ((tokens - 1) * vocab + v), 4);
        bits[v] = b;
    }
    return bits;
}

void chunk_equals_token_by_token(models::SynthArch arch) {
    test::ScratchDir dir("chunked-prefill");
    models::SynthOptions o;
    o.arch = arch;
    o.size = models::SynthSize::Tiny;
    o.seed = 5;
    models::make_model(o, dir / "m");
    auto m = models::load_model(dir / "m");
    auto one_by_one = test::in_child([&] { return last_logits(m, 1); });
    auto chunked = last_logits(m, chunk);
    REQUIRE(one_by_one.size() == chunked.size());
    REQUIRE(!chunked.empty());
    CHECK(one_by_one == chunked);
}

} // namespace

TEST_CASE("a dense prefill chunk gives the logits of feeding its tokens one step each, bit for bit") {
    chunk_equals_token_by_token(models::SynthArch::Dense);
}

TEST_CASE("a hybrid prefill chunk (conv windows, delta-rule states) gives the logits of one step each") {
    chunk_equals_token_by_token(models::SynthArch::Hybrid);
}
