// The golden executor given the image the card ran: it reads a matrix's bytes from the image only
// when they equal its own packing, so its results never depend on lowering's.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/image.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;

namespace {

const graph::DecoderShape shape{2, 128, 4, 2, 32, 256, 300};
const graph::Bucket bucket{2, 2, 0};
constexpr std::size_t steps = 3, max_positions = 8;

/// Every value of the graph after each of three steps.
std::vector<std::vector<std::vector<float>>> run(golden::Golden& gold) {
    std::vector<std::vector<std::vector<float>>> out;
    for (std::size_t s = 0; s < steps; ++s) {
        auto t = std::uint32_t(s);
        out.push_back(gold.step(graph::BatchInputs{{3 + 7 * t, 90 + t}, {t, t}, {}, {}, {}, {}, {}, {}}));
    }
    return out;
}

/// Whether two runs' values are the same bit for bit.
bool same_bits(const std::vector<std::vector<std::vector<float>>>& a,
               const std::vector<std::vector<std::vector<float>>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t s = 0; s < a.size(); ++s) {
        if (a[s].size() != b[s].size()) return false;
        for (std::size_t v = 0; v < a[s].size(); ++v)
            if (a[s][v].size() != b[s][v].size() ||
                std::memcmp(a[s][v].data(), b[s][v].data(), a[s][v].size() * sizeof(float)) != 0)
                return false;
    }
    return true;
}

} // namespace

TEST_CASE("the golden executor reads the image's matrices only where they equal its own packing") {
    const auto config = card::default_card_config();
    const auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    const auto compiled = lower::lower(g, w, lower::target_of(config), lower::Options{bucket, max_positions});
    REQUIRE_FALSE(compiled.image.matrices.empty());

    golden::Golden alone(g, w, config, bucket, max_positions);
    const auto expected = run(alone);
    REQUIRE(alone.matrices().from_image == 0);
    const std::size_t matrices = alone.matrices().own;
    REQUIRE(matrices > 2);

    SECTION("an image as lowered: every matrix is read from it, and every value is the same") {
        golden::Golden shared(g, w, config, bucket, max_positions, std::nullopt, &compiled.image);
        REQUIRE(same_bits(run(shared), expected));
        CHECK(shared.matrices().from_image == matrices);
        CHECK(shared.matrices().own == 0);
    }
    SECTION("one byte of one matrix changed: that matrix is packed anew, and every value is the same") {
        program::Image damaged = compiled.image; // a copy: the compiled image stays as it was
        const auto& m = damaged.matrices.at(1);
        for (auto& c : damaged.chunks)
            if (c.address <= m.address && m.address < c.address + c.bytes.size())
                c.bytes[m.address - c.address + m.bytes / 2] ^= std::byte{0x10};
        REQUIRE(damaged != compiled.image);
        golden::Golden checked(g, w, config, bucket, max_positions, std::nullopt, &damaged);
        REQUIRE(same_bits(run(checked), expected));
        CHECK(checked.matrices().from_image == matrices - 1);
        CHECK(checked.matrices().own == 1);
    }
    SECTION("an image read from its file, its matrices named by a shapes-only lowering: every matrix "
            "is read from it") {
        const test::ScratchDir dir("golden-image");
        program::write(compiled.image, dir / "p.ddr");
        auto read = program::read_image(dir / "p.ddr");
        REQUIRE(read.matrices.empty()); // not in the file
        auto o = lower::Options{bucket, max_positions};
        o.shapes_only = true;
        const auto placed = lower::lower(g, w, lower::target_of(config), o);
        REQUIRE(placed.image.chunks.empty());
        read.matrices = placed.image.matrices;
        REQUIRE(read.matrices.size() == compiled.image.matrices.size());
        golden::Golden mapped(g, w, config, bucket, max_positions, std::nullopt, &read);
        REQUIRE(same_bits(run(mapped), expected));
        CHECK(mapped.matrices().from_image == matrices);
        CHECK(mapped.matrices().own == 0);
    }
}
