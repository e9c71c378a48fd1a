// The host line and --machine say where a compile's weights came from: packed now, the pack
// cache (CARDSIM_PACK_CACHE), or none (timed from shapes) — for run and serve alike.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

TEST_CASE("a run says whether its weights were packed, came from the pack cache or were not needed") {
    ScratchDir dir("host-weights");
    const auto m = (dir / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 4 -o " + m).code == 0);
    // Each ctest case is its own process: the variable reaches only this test's commands.
    REQUIRE(::setenv("CARDSIM_PACK_CACHE", (dir / "cache").c_str(), 1) == 0);
    auto first = run_cardsim("run " + m + " --tokens 2 --machine");
    REQUIRE(first.code == 0);
    CHECK(contains(first.out, "host_compile_weights=packed\n"));
    auto again = run_cardsim("run " + m + " --tokens 2");
    REQUIRE(again.code == 0);
    CHECK(contains(again.out, "s (weights from the pack cache), simulation "));
    CHECK(contains(again.out, "bit-exact: yes"));
    auto timing = run_cardsim("run " + m + " --tokens 2 --timing-only --machine");
    CHECK(contains(timing.out, "host_compile_weights=none\n"));
    const std::string serve =
        "serve " + m + " --gen poisson --rate 1000 --count 3 --prompt-len 4 --output-len 2 --check";
    auto served = run_cardsim(serve + " --machine");
    REQUIRE(served.code == 0);
    CHECK(contains(served.out, "host_compile_weights=cache\n")); // the run above packed these weights
    REQUIRE(::unsetenv("CARDSIM_PACK_CACHE") == 0);
    auto uncached = run_cardsim(serve);
    REQUIRE(uncached.code == 0);
    CHECK_FALSE(contains(uncached.out, "pack cache"));
}

TEST_CASE("the option --pack-cache names run's and serve's cache, empty turns the environment's off, and is "
          "refused "
          "where nothing is packed") {
    ScratchDir dir("pack-cache-option");
    const auto m = (dir / "m").string(), cache = (dir / "given").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 4 -o " + m).code == 0);
    REQUIRE(::setenv("CARDSIM_PACK_CACHE", (dir / "env").c_str(), 1) == 0);
    auto first = run_cardsim("run " + m + " --tokens 2 --machine --pack-cache " + cache);
    REQUIRE(first.code == 0);
    CHECK(contains(first.out, "host_compile_weights=packed\n"));
    CHECK(std::filesystem::exists(cache));
    CHECK_FALSE(std::filesystem::exists(dir / "env")); // the option, not the environment
    const std::string serve =
        "serve " + m + " --gen poisson --rate 1000 --count 3 --prompt-len 4 --output-len 2 --machine";
    auto served = run_cardsim(serve + " --check --pack-cache " + cache);
    REQUIRE(served.code == 0);
    CHECK(contains(served.out, "host_compile_weights=cache\n"));
    // Given empty: none, though the environment names one.
    auto none = run_cardsim("run " + m + " --tokens 2 --machine --pack-cache ''");
    REQUIRE(none.code == 0);
    CHECK(contains(none.out, "host_compile_weights=packed\n"));
    CHECK_FALSE(std::filesystem::exists(dir / "env"));
    REQUIRE(::unsetenv("CARDSIM_PACK_CACHE") == 0);
    // Where nothing is packed it is refused, not ignored.
    auto timing = run_cardsim("run " + m + " --tokens 2 --timing-only --pack-cache " + cache);
    CHECK(timing.code == 2);
    CHECK(contains(timing.out, "--pack-cache: a timing-only run reads and packs no weights"));
    auto unchecked = run_cardsim(serve + " --pack-cache " + cache);
    CHECK(unchecked.code == 2);
    CHECK(contains(unchecked.out, "--pack-cache: serving without --check"));
    const auto prog = (dir / "p.prog").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + prog + " --pack-cache " + cache).code == 0);
    auto program = run_cardsim("run " + prog + " --tokens 2 --pack-cache " + cache);
    CHECK(program.code == 2);
    CHECK(contains(program.out, "a program's weights are in its image, so nothing is packed"));
    auto shapes = run_cardsim("compile " + m + " -o " + prog + ".s --shapes-only --pack-cache " + cache);
    CHECK(shapes.code == 2);
    CHECK(contains(shapes.out, "--pack-cache: a shapes-only compile reads and packs no weights"));
}

TEST_CASE("each card of a plan keeps its own pack cache entry, so a second run of the plan packs nothing") {
    ScratchDir dir("pack-cache-plan");
    const auto m = (dir / "m").string(), cache = (dir / "cache").string();
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --seed 4 -o " + m).code == 0);
    const std::string run =
        "run " + m + " --tokens 2 --set system.cards=2 --plan pp --machine --pack-cache " + cache;
    auto first = run_cardsim(run);
    INFO(first.out);
    REQUIRE(first.code == 0);
    CHECK(contains(first.out, "host_compile_weights=packed\n"));
    std::size_t packs = 0;
    for (auto& e : std::filesystem::directory_iterator(cache))
        packs += e.path().extension() == ".pack" ? 1 : 0;
    CHECK(packs == 2); // one a card, neither overwriting the other
    auto again = run_cardsim(run);
    INFO(again.out);
    REQUIRE(again.code == 0);
    CHECK(contains(again.out, "host_compile_weights=cache\n"));
    CHECK(contains(again.out, "bit_exact=yes\n"));
}
