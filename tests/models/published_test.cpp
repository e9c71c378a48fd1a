// The published shapes make-model --shapes-only writes: the recognisers accept them, and their
// parameter counts are the ones the models' cards publish (Qwen3: 1.7B, 4.0B, 8.2B, 14.8B, 32.8B;
// Qwen3.5-9B: 8.95B in its GGUF metadata), so no shape number is off.

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
