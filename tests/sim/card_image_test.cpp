// A card loads its image by reading it in place where it can: the memory lowering packed into, or
// an image file mapped, is lent to the DDR rather than copied.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/image.hpp"
#include "sim/card/card.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

using namespace cardsim;

namespace {

const graph::DecoderShape shape{2, 128, 4, 2, 32, 256, 300};

/// Whether a full-mode card given `image` lends it to its DDR, and whether the DDR's weights
/// region then reads every chunk's bytes at its address (1 for yes).
std::vector<std::uint64_t> load(const card::CardConfig& config, const lower::Compiled& compiled,
                                const program::Image& image) {
    return test::in_child([&] {
        sim::Card card("card", config, compiled.program, image, sim::Mode::Full,
                       sim::units::UnitSet::standard(config));
        bool same = true;
        for (auto& c : image.chunks) {
            std::vector<std::byte> got(c.bytes.size());
            card.read(program::Region::Weights, c.address, got);
            same = same && std::equal(got.begin(), got.end(), c.bytes.begin());
        }
        return std::vector<std::uint64_t>{card.ddr().lending() ? 1u : 0u, same ? 1u : 0u};
    });
}

} // namespace

TEST_CASE("an image read from its file is lent to the card's DDR, as the packed image is") {
    const auto config = card::default_card_config();
    const auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    const auto compiled =
        lower::lower(g, w, lower::target_of(config), lower::Options{graph::Bucket{2, 2, 0}, 8});
    REQUIRE(compiled.image.chunks.size() > 2);
    CHECK(load(config, compiled, compiled.image) == std::vector<std::uint64_t>{1, 1});

    const test::ScratchDir dir("card-image");
    program::write(compiled.image, dir / "p.ddr");
    const auto mapped = program::read_image(dir / "p.ddr");
    REQUIRE(mapped == compiled.image);
    CHECK(load(config, compiled, mapped) == std::vector<std::uint64_t>{1, 1});

    // A copy owns its bytes chunk by chunk: loaded by copying, the same bytes.
    const program::Image copied = compiled.image;
    CHECK(load(config, compiled, copied) == std::vector<std::uint64_t>{0, 1});
}
