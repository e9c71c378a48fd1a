// `cardsim make-model` and `cardsim inspect` from the command line: exit codes, what they print.

#include "models/model.hpp"
#include "support.hpp"
#include "tests/support/run_cardsim.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

using namespace cardsim::models;
using namespace cardsim::models::test;
using Catch::Matchers::Contains;

namespace {

/// Runs `cardsim <args>`; returns the exit code and what it printed.
std::pair<int, std::string> run_cli(const std::string& args) {
    const auto r = cardsim::test::run_cardsim(args);
    return {r.code, r.out};
}

} // namespace

TEST_CASE("make-model writes a checkpoint the loader reads and inspect describes", "[models][cli]") {
    ScratchDir d("cli-make");
    const auto dir = (d / "m").string();
    auto [code, out] =
        run_cli("make-model --arch hybrid-moe --size tiny --seed 3 --dtype f32 --shards 2 -o " + dir);
    INFO(out);
    REQUIRE(code == 0);
    CHECK_THAT(out, Contains("hybrid decoder with experts (qwen3_next)"));
    const auto m = load_model(dir);
    CHECK(m.checkpoint.files().size() == 2);
    CHECK(m.checkpoint.dtype(0) == Dtype::F32);

    auto [icode, inspect] = run_cli("inspect " + dir);
    INFO(inspect);
    REQUIRE(icode == 0);
    CHECK_THAT(inspect, Contains("architecture: hybrid decoder with experts (qwen3_next)"));
    CHECK_THAT(inspect, Contains("3 × deltanet+moe") && Contains("1 × attention+moe"));
    CHECK_THAT(inspect, Contains(std::to_string(m.checkpoint.parameter_count())));
    CHECK_THAT(
        inspect,
        Contains("model.layers.0.linear_attn.in_proj_qkvz.weight [96, 32] heads of 48: rows 0..8 of eachᵀ"));
    CHECK_THAT(inspect,
               Contains("model.layers.3.self_attn.q_proj.weight [64, 32] heads of 32: rows 16..32 of eachᵀ"));
    CHECK_THAT(inspect, Contains("mlp.shared_expert_gate.weight"));
    CHECK_THAT(inspect, !Contains("tensors the graph does not read"));
}

TEST_CASE("make-model --arch moe writes a qwen3_moe checkpoint whose experts inspect shows",
          "[models][cli]") {
    ScratchDir d("cli-make-moe");
    const auto dir = (d / "m").string();
    auto [code, out] = run_cli("make-model --arch moe --size small --seed 4 -o " + dir);
    INFO(out);
    REQUIRE(code == 0);
    CHECK_THAT(out, Contains("dense decoder with experts (qwen3_moe)"));
    const auto m = load_model(dir);
    REQUIRE(m.checkpoint.find("model.layers.3.mlp.gate.weight"));
    REQUIRE(m.checkpoint.find("model.layers.0.mlp.experts.15.down_proj.weight"));
    CHECK_FALSE(m.checkpoint.find("model.layers.0.mlp.experts.16.down_proj.weight"));
    CHECK_FALSE(m.checkpoint.find("model.layers.0.mlp.shared_expert_gate.weight"));
    CHECK_FALSE(m.checkpoint.find("model.layers.0.mlp.gate_proj.weight"));

    auto [icode, inspect] = run_cli("inspect " + dir);
    INFO(inspect);
    REQUIRE(icode == 0);
    CHECK_THAT(inspect, Contains("architecture: dense decoder with experts (qwen3_moe)"));
    CHECK_THAT(inspect, Contains("4 × attention+moe"));
    CHECK_THAT(inspect, Contains("experts:      16 in each of 4 layers, 4 chosen per token"));
    // Of 16 experts of 3 × 128 × 64 in 4 layers a token reads 4: 12 × 4 × 24576 idle.
    const auto total = m.checkpoint.parameter_count();
    CHECK_THAT(inspect,
               Contains(fmt::format("a token reads {} of the {} parameters", total - 12 * 4 * 24576, total)));
    CHECK_THAT(inspect, Contains("model.layers.2.mlp.experts.7.up_proj.weight [64, 128]"));
    CHECK_THAT(inspect, !Contains("tensors the graph does not read"));
    auto [tcode, tiny] = run_cli("make-model --arch moe --size 0.1b -o " + (d / "big").string());
    CHECK(tcode == 2);
    CHECK_THAT(tiny, Contains("--arch moe in tiny or small"));
}

TEST_CASE("make-model --arch hybrid-moe35 writes a qwen3_5_moe checkpoint with fused expert tensors",
          "[models][cli]") {
    ScratchDir d("cli-make-moe35");
    const auto dir = (d / "m").string();
    auto [code, out] = run_cli("make-model --arch hybrid-moe35 --size small --seed 4 -o " + dir);
    INFO(out);
    REQUIRE(code == 0);
    CHECK_THAT(out, Contains("hybrid decoder with experts (qwen3_5_moe)"));
    const auto m = load_model(dir);
    const std::string p = "model.language_model.layers.";
    // Qwen3_5MoeExperts' parameters: gate_up_proj [E, 2I, H], down_proj [E, H, I] (no `.weight`).
    const auto gate_up = m.checkpoint.find(p + "3.mlp.experts.gate_up_proj");
    const auto down = m.checkpoint.find(p + "3.mlp.experts.down_proj");
    REQUIRE(gate_up);
    REQUIRE(down);
    CHECK(
        std::vector<std::size_t>(m.checkpoint.shape(*gate_up).begin(), m.checkpoint.shape(*gate_up).end()) ==
        std::vector<std::size_t>{8, 128, 128});
    CHECK(std::vector<std::size_t>(m.checkpoint.shape(*down).begin(), m.checkpoint.shape(*down).end()) ==
          std::vector<std::size_t>{8, 128, 64});
    CHECK(m.checkpoint.find(p + "0.mlp.shared_expert_gate.weight"));
    CHECK(m.checkpoint.find(p + "0.linear_attn.in_proj_qkv.weight"));
    CHECK_FALSE(m.checkpoint.find(p + "0.mlp.experts.0.gate_proj.weight"));
    CHECK_FALSE(m.checkpoint.find(p + "0.mlp.gate_proj.weight"));

    auto [icode, inspect] = run_cli("inspect " + dir);
    INFO(inspect);
    REQUIRE(icode == 0);
    CHECK_THAT(inspect, Contains("6 × deltanet+moe") && Contains("2 × attention+moe"));
    CHECK_THAT(inspect,
               Contains("experts:      8 in each of 8 layers, 2 chosen per token (softmax over the chosen)"));
    // Expert 1's gate, its up and its down: rows of the fused tensors.
    CHECK_THAT(inspect, Contains("mlp.experts.gate_up_proj [8, 128, 128] rows 128..192ᵀ"));
    CHECK_THAT(inspect, Contains("mlp.experts.gate_up_proj [8, 128, 128] rows 192..256ᵀ"));
    CHECK_THAT(inspect, Contains("mlp.experts.down_proj [8, 128, 64] rows 128..256ᵀ"));
    CHECK_THAT(inspect, !Contains("tensors the graph does not read"));
    auto [bcode, big] = run_cli("make-model --arch hybrid-moe35 --size 0.1b -o " + (d / "big").string());
    CHECK(bcode == 2);
    CHECK_THAT(big, Contains("--arch hybrid-moe35 in tiny or small"));
}

TEST_CASE("make-model and inspect refuse bad input with exit code 2 and a reason", "[models][cli]") {
    ScratchDir d("cli-bad");
    auto [c1, o1] = run_cli("make-model --arch rnn -o " + (d / "x").string());
    CHECK(c1 == 2);
    CHECK_THAT(o1, Contains("--arch `rnn`"));
    auto [c2, o2] = run_cli("make-model --arch dense --size huge -o " + (d / "x").string());
    CHECK(c2 == 2);
    CHECK_THAT(o2, Contains("--size `huge`"));
    auto [c3, o3] = run_cli("make-model --arch dense --dtype f16 -o " + (d / "x").string());
    CHECK(c3 == 2);
    CHECK_THAT(o3, Contains("--dtype `f16`"));
    auto [c4, o4] = run_cli("make-model --arch dense");
    CHECK(c4 == 2);
    REQUIRE(run_cli("make-model --arch dense -o " + (d / "m").string()).first == 0);
    auto [c5, o5] = run_cli("make-model --arch dense -o " + (d / "m").string());
    CHECK(c5 == 2);
    CHECK_THAT(o5, Contains("already exists"));
    CHECK(run_cli("make-model --arch encoder --force -o " + (d / "m").string()).first == 0);
    CHECK(std::holds_alternative<EncoderSpec>(load_model(d / "m").spec));

    write_file(d / "m" / "model.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));
    auto [c6, o6] = run_cli("inspect " + (d / "m").string());
    CHECK(c6 == 2);
    CHECK_THAT(o6, Contains("embeddings.tok_embeddings.weight"));
    write_file(d / "m" / "model.safetensors", std::string("\x10\0\0\0\0\0\0\0{}", 10));
    auto [c8, o8] = run_cli("inspect " + (d / "m").string());
    CHECK(c8 == 2);
    CHECK_THAT(o8, Contains("model.safetensors") && Contains("truncated"));
    auto [c7, o7] = run_cli("inspect " + (d / "nowhere").string());
    CHECK(c7 == 2);
    CHECK_THAT(o7, Contains("not a directory"));
}
