// traces/FORMAT.md and the library agree: its example reads, its test vectors hold.

#include "engine/io/atomic_file.hpp"
#include "fixtures.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"
#include "traces/xxh64.hpp"

#include <catch2/catch.hpp>

#include <numeric>

using namespace cardsim::traces;
namespace io = cardsim::io;
using namespace cardsim::traces::testing;

namespace {

/// The text of the first ```trace block of FORMAT.md.
std::string format_example() {
    auto doc = io::read_file(std::filesystem::path(CARDSIM_SOURCE_DIR) / "traces" / "FORMAT.md");
    auto open = doc.find("```trace\n");
    REQUIRE(open != std::string::npos);
    open += 9;
    auto close = doc.find("```", open);
    REQUIRE(close != std::string::npos);
    return doc.substr(open, close - open);
}

} // namespace

TEST_CASE("the example of FORMAT.md is a valid trace with the facts its text states", "[traces][format]") {
    auto t = parse_trace(format_example(), "FORMAT.md example");
    REQUIRE(t.records.size() == 4);
    std::vector<std::uint8_t> counting(64);
    std::iota(counting.begin(), counting.end(), std::uint8_t{0});
    CHECK(t.records[0].digest == xxh64(counting));
    CHECK(t.records[1].data.at(0).bytes ==
          f32_bytes({1.0f, -1.0f, 0.0f, 0.5f, 0.25f, 3.14159265f, 1e-45f, -0.0f}));
    CHECK(t.records[3].digest == empty_digest);
    CHECK(t.header.meta.at("note") == "line one\nline two");
    // It is spelt exactly as the writer spells it.
    CHECK(to_text(t) == format_example());
}

TEST_CASE("xxh64 gives the test vectors FORMAT.md publishes", "[traces][digest]") {
    std::vector<std::uint8_t> counting(64);
    std::iota(counting.begin(), counting.end(), std::uint8_t{0});
    // Computed with an independent implementation of the published XXH64 algorithm.
    CHECK(xxh64(counting) == 0xf7c67301db6713f0ULL);
    CHECK(xxh64(std::span<const std::uint8_t>{}) == 0xef46db3751d8e999ULL);
}
