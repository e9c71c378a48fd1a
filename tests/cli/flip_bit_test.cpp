// --flip-bit: a deliberate one-bit error in one command's output. The bit-exact check catches it
// where it reaches an output and names the value, the element and both bit patterns.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <regex>
#include <string>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

TEST_CASE("a bit flipped in the arg-max is caught and named, the two patterns one bit apart") {
    ScratchDir d("flip-bit");
    const auto m = make_model(d, "dense");
    const auto prog = (d / "p").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + prog + " --max-positions 8").code == 0);
    const auto listing = run_cardsim("disasm " + prog).out;
    std::smatch found;
    REQUIRE(std::regex_search(listing, found, std::regex(R"(\n +(\d+) +argmax +ArgMax)")));
    const auto argmax = found[1].str();
    auto r = run_cardsim("run " + m + " --tokens 2 --flip-bit 1:" + argmax + ":3:6");
    INFO(r.out);
    CHECK(r.code == 1);
    std::smatch mm;
    REQUIRE(std::regex_search(
        r.out, mm,
        std::regex(
            R"(bit-exact: NO: step 1, output next, element 0: card 0x([0-9a-f]{8}) .*golden 0x([0-9a-f]{8}))")));
    const auto card = std::stoul(mm[1].str(), nullptr, 16), golden = std::stoul(mm[2].str(), nullptr, 16);
    CHECK((card ^ golden) == (1u << 30)); // byte 3, bit 6
    // The same run without the flip is bit-exact: the check caught the flip, not a defect.
    CHECK(run_cardsim("run " + m + " --tokens 2").code == 0);
}

TEST_CASE("a flip outside the run is refused, never silently ignored") {
    ScratchDir d("flip-bit-range");
    const auto m = make_model(d, "dense");
    for (auto flip : {"5:0", "0:100000", "1", "1:2:3:8", "a:b"}) {
        auto r = run_cardsim("run " + m + " --tokens 2 --flip-bit " + std::string(flip));
        INFO(flip << "\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, "--flip-bit"));
    }
    CHECK(run_cardsim("run " + m + " --tokens 2 --timing-only --flip-bit 0:0").code == 2);
}
