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

/// The text of the ```trace block of FORMAT.md that is a system's (`cardsim-trace 3`).
std::string system_example() {
    auto doc = io::read_file(std::filesystem::path(CARDSIM_SOURCE_DIR) / "traces" / "FORMAT.md");
    auto open = doc.find("```trace\ncardsim-trace 3\n");
    REQUIRE(open != std::string::npos);
    open += 9;
    auto close = doc.find("```", open);
    REQUIRE(close != std::string::npos);
    return doc.substr(open, close - open);
}

} // namespace

TEST_CASE("the system example of FORMAT.md is a valid version 3 trace with the facts its text states",
          "[traces][format]") {
    auto t = parse_trace(system_example(), "FORMAT.md system example");
    REQUIRE(t.header.cards.size() == 2);
    CHECK(t.header.program == system_digest(t.header.cards));
    REQUIRE(t.records.size() == 6);
    const auto& recv = t.records[2];
    CHECK(recv.card == 0u);
    CHECK(recv.opcode == "Recv");
    REQUIRE(recv.split);
    CHECK((*recv.split)[TimePart::Link] == 90);
    CHECK((*recv.split)[TimePart::Unit] == 100);
    REQUIRE(t.messages.size() == 2);
    CHECK(t.messages[0] == Message{0, 1, 715, 811, 3072});
    // The message's last byte left at 811; one hop of 304 ns (91.2 cycles at 300 MHz) later, the receive.
    CHECK(recv.start == t.messages[1].end + 91);
    // It is spelt exactly as the writer spells it.
    CHECK(to_text(t) == system_example());
}

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
