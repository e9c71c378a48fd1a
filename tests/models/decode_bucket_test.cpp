// A decode bucket of several sequences (one token row each, its own positions and cache or state
// rows) in the golden executor: each sequence's rows equal that sequence run alone bit for bit,
// whichever sequences share its steps and at whichever row it stands. The card equals the golden
// executor on every bucket (`cardsim run --seqs` checks it), so the card's sequences do not leak
// either.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cstring>
#include <vector>

using namespace cardsim;

namespace {

constexpr std::size_t steps = 5, max_positions = 8;

/// A sequence's token at step `s`: teacher-forced ids that differ per sequence and per step.
using Tokens = std::vector<std::uint32_t>;
Tokens tokens_of(std::uint32_t seed) {
    Tokens t;
    for (std::uint32_t s = 0; s < steps; ++s)
        t.push_back((seed * 37 + s * 13 + 1) % 90);
    return t;
}

/// Each graph output's row of each sequence at each step ([step][output][sequence] → bit patterns),
/// running `seqs` together in one bucket.
using Rows = std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>>;
Rows run_bucket(const models::BuiltGraph& built, const models::Model& model,
                const std::vector<Tokens>& seqs) {
    const auto config = card::default_card_config();
    const std::size_t n = seqs.size();
    golden::Golden gold(built.graph, model.checkpoint, config, graph::Bucket{n, n, 0}, max_positions);
    Rows out;
    for (std::uint32_t s = 0; s < steps; ++s) {
        graph::BatchInputs in;
        for (auto& t : seqs) {
            in.ids.push_back(t[s]);
            in.positions.push_back(s);
        }
        gold.step(in);
        auto& step = out.emplace_back();
        for (auto v : built.graph.outputs()) {
            const auto& f = gold.value(v);
            const std::size_t w = f.size() / n;
            auto& per_seq = step.emplace_back();
            for (std::size_t q = 0; q < n; ++q) {
                std::vector<std::uint32_t> bits(w);
                std::memcpy(bits.data(), f.data() + q * w, 4 * w);
                per_seq.push_back(bits);
            }
        }
    }
    return out;
}

/// Sequence at row `row` of `bucket` equals row `alone_row` of `alone`, at every step and output.
void same_sequence(const Rows& bucket, std::size_t row, const Rows& alone, std::size_t alone_row) {
    for (std::size_t s = 0; s < steps; ++s)
        for (std::size_t o = 0; o < bucket[s].size(); ++o) {
            INFO("step " << s << ", output " << o);
            REQUIRE(bucket[s][o][row] == alone[s][o][alone_row]);
        }
}

void bucket_rows_are_independent(models::SynthArch arch) {
    test::ScratchDir scratch(fmt::format("decode-bucket-{}", models::name(arch)));
    models::SynthOptions opt;
    opt.arch = arch;
    opt.seed = 5;
    models::make_model(opt, scratch / "model");
    auto model = models::load_model(scratch / "model");
    auto built = models::build_graph(model);
    const Tokens a = tokens_of(1), b = tokens_of(2), c = tokens_of(3), d = tokens_of(4);
    auto together = run_bucket(built, model, {a, b, c});
    // Each row equals its sequence alone.
    const std::vector<Tokens> seqs{a, b, c};
    for (std::size_t q = 0; q < seqs.size(); ++q) {
        INFO(models::name(arch) << ": sequence " << q << " alone");
        same_sequence(together, q, run_bucket(built, model, {seqs[q]}), 0);
    }
    // Other neighbours, and b at another row: b's rows do not change.
    auto others = run_bucket(built, model, {d, c, b});
    INFO(models::name(arch) << ": sequence b between other neighbours, at row 2");
    same_sequence(others, 2, together, 1);
    // Not vacuous: the sequences' outputs differ, and so do a sequence's steps.
    REQUIRE(together[steps - 1][0][0] != together[steps - 1][0][1]);
    REQUIRE(together[0][0][0] != together[steps - 1][0][0]);
}

} // namespace

TEST_CASE("a dense decode bucket's sequences equal each sequence run alone, whatever its neighbours") {
    bucket_rows_are_independent(models::SynthArch::Dense);
}

TEST_CASE("a hybrid decode bucket's sequences equal each sequence run alone, whatever its neighbours") {
    bucket_rows_are_independent(models::SynthArch::Hybrid);
}

TEST_CASE("a windowed decode bucket's sequences equal each sequence run alone, whatever its neighbours") {
    bucket_rows_are_independent(models::SynthArch::Windowed);
}
