// The published shapes make-model --shapes-only writes: the recognisers accept them, and their
// parameter counts are the ones the models' cards publish (Qwen3: 1.7B, 4.0B, 8.2B, 14.8B, 32.8B;
// Qwen3.5-9B: 8.95B in its GGUF metadata; with experts Qwen3-30B-A3B, -235B-A22B, Qwen3-Next-80B-A3B,
// Qwen3.5-35B-A3B and -122B-A10B), so no shape number is off.

#include "engine/error.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim;

namespace {

/// The parameter count of the published `arch` `size`, in billions, from its config.json alone.
double billions(models::SynthArch arch, models::PublishedSize size) {
    test::ScratchDir dir("published");
    models::write_config_only(models::published_model(arch, size).config, dir / "m", false);
    auto m = models::load_model(dir / "m");
    REQUIRE(m.checkpoint.shapes_only());
    CHECK_NOTHROW(models::build_graph(m));
    return double(m.checkpoint.parameter_count()) / 1e9;
}

} // namespace

TEST_CASE("the published Qwen3 shapes have the parameter counts of the Qwen3 model cards") {
    using models::PublishedSize;
    const auto d = models::SynthArch::Dense;
    CHECK(std::round(billions(d, PublishedSize::B1_7) * 10) / 10 == 1.7);
    CHECK(std::round(billions(d, PublishedSize::B4) * 10) / 10 == 4.0);
    CHECK(std::round(billions(d, PublishedSize::B8) * 10) / 10 == 8.2);
    CHECK(std::round(billions(d, PublishedSize::B14) * 10) / 10 == 14.8);
    CHECK(std::round(billions(d, PublishedSize::B32) * 10) / 10 == 32.8);
}

TEST_CASE("the published Qwen3.5 shapes: the 9B's count, and sizes with no published model refused") {
    using models::PublishedSize;
    const auto h = models::SynthArch::Hybrid;
    CHECK(std::round(billions(h, PublishedSize::B8) * 100) / 100 == 8.95);
    CHECK(billions(h, PublishedSize::B4) < billions(h, PublishedSize::B8));
    CHECK(billions(h, PublishedSize::B32) > 25);
    CHECK_THROWS_WITH(models::published_model(h, PublishedSize::B14),
                      Catch::Contains("no Qwen3.5 of about 14b"));
    CHECK_THROWS_WITH(models::published_model(h, PublishedSize::B1_7),
                      Catch::Contains("0.8B, 2B, 4B, 9B and 27B"));
    CHECK_THROWS_WITH(models::published_model(models::SynthArch::Encoder, PublishedSize::B8),
                      Catch::Contains("not encoder"));
}

namespace {

/// A published model with experts: its arch, size, and its model card's total and active
/// parameters in billions.
struct ExpertModel {
    models::SynthArch arch;
    models::PublishedSize size;
    double total, active;
};

} // namespace

TEST_CASE("the published expert shapes have their model cards' total parameter counts within 4 % and their "
          "active counts within 30 %") {
    using models::PublishedSize;
    using models::SynthArch;
    const ExpertModel published[] = {
        {SynthArch::Moe, PublishedSize::A3B30, 30.5, 3.3},
        {SynthArch::Moe, PublishedSize::A22B235, 235, 22},
        {SynthArch::HybridMoe, PublishedSize::A3B80, 80, 3},
        {SynthArch::HybridMoe35, PublishedSize::A3B35, 35, 3},
        {SynthArch::HybridMoe35, PublishedSize::A10B122, 122, 10},
        {SynthArch::GptOss, PublishedSize::Oss20, 21, 3.6},   // openai/gpt-oss-20b's card
        {SynthArch::GptOss, PublishedSize::Oss120, 117, 5.1}, // openai/gpt-oss-120b's card
    };
    for (const auto& p : published) {
        INFO(models::name(p.size));
        test::ScratchDir dir("published-experts");
        models::write_config_only(models::published_model(p.arch, p.size).config, dir / "m", false);
        const auto m = models::load_model(dir / "m");
        REQUIRE(m.checkpoint.shapes_only());
        REQUIRE(std::get<models::DecoderSpec>(m.spec).moe);
        CHECK_NOTHROW(models::build_graph(m));
        const double total = double(m.checkpoint.parameter_count()) / 1e9;
        const double active = double(models::active_parameters(m.spec, m.checkpoint.parameter_count())) / 1e9;
        UNSCOPED_INFO("total " << total << " B, active " << active << " B");
        CHECK(std::abs(total / p.total - 1) < 0.04);
        // Cards round the active count to a figure and count it differently (Qwen3-Next's 3B leaves out
        // the 0.6B embedding and head; this counts every weight a token reads: 3.87B).
        CHECK(std::abs(active / p.active - 1) < 0.3);
    }
}

TEST_CASE("an expert size of another architecture is refused naming the architecture it belongs to") {
    using models::PublishedSize;
    using models::SynthArch;
    CHECK_THROWS_WITH(models::published_model(SynthArch::HybridMoe, PublishedSize::A3B35),
                      Catch::Contains("35b-a3b is a published model of --arch hybrid-moe35, not hybrid-moe"));
    CHECK_THROWS_WITH(models::published_model(SynthArch::Dense, PublishedSize::A3B30),
                      Catch::Contains("--arch moe, not dense"));
    CHECK_THROWS_WITH(models::published_model(SynthArch::Moe, PublishedSize::B8),
                      Catch::Contains("its published sizes: moe 30b-a3b, 235b-a22b"));
}
