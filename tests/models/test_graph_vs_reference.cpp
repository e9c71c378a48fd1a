// The graph builders' graphs, evaluated in double, against the independent f64 reference: same
// greedy tokens and logits within 1e-9 relative, for every architecture make-model writes.

#include "models/graph_eval.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

using namespace cardsim::models;
using namespace cardsim::models::test;

namespace {

constexpr double TOLERANCE = 1e-9;

/// Greedy-decodes `prompt` for `steps` tokens through the graph (prefill as decode steps) and through
/// the reference; requires the same tokens and logits within TOLERANCE at every step.
void decoder_agrees(const std::filesystem::path& dir, std::vector<std::int64_t> prompt, std::size_t steps) {
    const Model m = load_model(dir);
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const DecoderReference ref(m.checkpoint);
    const auto expected = ref.greedy(prompt, steps);

    GraphEvaluator::Step last;
    for (auto t : prompt) {
        const DecodeRow row{7, t};
        last = eval.step(std::span(&row, 1));
    }
    for (std::size_t i = 0; i < steps; ++i) {
        INFO("step " << i);
        REQUIRE(last.next.size() == 1);
        CHECK(relative_error(last.logits.row(0), expected.logits[i]) < TOLERANCE);
        REQUIRE(last.next[0] == expected.tokens[i]);
        const DecodeRow row{7, last.next[0]};
        last = eval.step(std::span(&row, 1));
    }
}

/// Feeds two sequences' prompts interleaved in shared steps (a bucket of two rows when both have a
/// token left, one row otherwise); each sequence's logits must match its own reference run.
void batch_agrees(const std::filesystem::path& dir) {
    const Model m = load_model(dir);
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const DecoderReference ref(m.checkpoint);
    const std::vector<std::int64_t> a{3, 17, 42, 5, 9, 60}, b{88, 1, 30};
    const auto ea = ref.prompt_logits(a), eb = ref.prompt_logits(b);
    for (std::size_t i = 0; i < a.size(); ++i) {
        std::vector<DecodeRow> rows{{0, a[i]}};
        if (i < b.size()) rows.push_back({1, b[i]});
        const auto out = eval.step(rows);
        INFO("position " << i);
        CHECK(relative_error(out.logits.row(0), ea[i]) < TOLERANCE);
        if (i < b.size()) CHECK(relative_error(out.logits.row(1), eb[i]) < TOLERANCE);
    }
    CHECK(eval.length(0) == a.size());
    CHECK(eval.length(1) == b.size());
}

} // namespace

TEST_CASE("the dense decoder's graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-dense");
    tiny(SynthArch::Dense, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the hybrid decoder's graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-hybrid");
    tiny(SynthArch::Hybrid, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("the hybrid decoder with experts' graph decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-moe");
    tiny(SynthArch::HybridMoe, d / "m");
    decoder_agrees(d / "m", {5, 61, 2, 33, 70}, 6);
}

TEST_CASE("a bf16 sharded hybrid checkpoint decodes like the f64 reference", "[models][reference]") {
    ScratchDir d("gvr-bf16");
    tiny(SynthArch::Hybrid, d / "m", 9, Dtype::BF16, 3);
    decoder_agrees(d / "m", {1, 2, 3}, 4);
}

TEST_CASE("decoder sequences sharing steps each match their own reference", "[models][reference]") {
    ScratchDir d("gvr-batch");
    tiny(SynthArch::Hybrid, d / "h");
    batch_agrees(d / "h");
    tiny(SynthArch::Dense, d / "d");
    batch_agrees(d / "d");
}

TEST_CASE("the encoder's graph gives the f64 reference's marker logits and act outputs",
          "[models][reference]") {
    ScratchDir d("gvr-encoder");
    tiny(SynthArch::Encoder, d / "m");
    const Model m = load_model(d / "m");
    const BuiltGraph g = build_graph(m);
    GraphEvaluator eval(g, m.checkpoint);
    const EncoderReference ref(m.checkpoint);
    // Lengths past the local window (2 each way), 0, 1 and 3 markers, every question type.
    const std::vector<EncoderSequence> batch{
        {{4, 8, 15, 16, 23, 42, 7, 1}, 2, {1, 4, 6}},
        {{90, 3}, 0, {}},
        {{11, 12, 13, 14, 15}, 3, {4}},
        {{50, 51, 52, 53, 54, 55, 56}, 1, {0, 6}},
    };
    const auto out = eval.encode(batch);
    std::size_t marker = 0;
    REQUIRE(out.act.rows == batch.size());
    for (std::size_t s = 0; s < batch.size(); ++s) {
        INFO("sequence " << s);
        const auto r = ref.run(batch[s].tokens, batch[s].question_type, batch[s].markers);
        for (double expected : r.marker_logits) {
            const double got = out.marker_logits.at(marker++, 0);
            CHECK(std::fabs(got - expected) <= TOLERANCE * std::max(1.0, std::fabs(expected)));
        }
        CHECK(relative_error(out.act.row(s), r.act) < TOLERANCE);
    }
    CHECK(marker == out.marker_logits.rows);
}
