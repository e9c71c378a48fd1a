// Dependencies of a command stream from its operands' bytes.

#include "engine/lower/dependencies.hpp"
#include "engine/program/slots.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace cardsim::program;

namespace {

/// An Add command reading `a`, `b` and writing `out`, arena byte offsets, 64 bytes each.
Command add(std::uint64_t a, std::uint64_t b, std::uint64_t out) {
    Command c;
    c.unit = Unit::Add;
    cardsim::program::fill<cardsim::program::slots::Add>(c,
                                                         {.a = {Region::Arena, Access::Read, a, 64},
                                                          .b = {Region::Arena, Access::Read, b, 64},
                                                          .out = {Region::Arena, Access::Write, out, 64}},
                                                         {.rows = 1, .width = 16});
    return c;
}

} // namespace

TEST_CASE("commands that share no written byte get no dependency and may overlap") {
    Program p;
    p.commands = {add(0, 64, 128), add(0, 64, 192), add(128, 192, 256)};
    cardsim::lower::add_dependencies(p);
    REQUIRE(p.commands[0].deps.empty());
    REQUIRE(p.commands[1].deps.empty()); // both only read 0 and 64
    REQUIRE(p.commands[2].deps == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("reusing a dead value's bytes waits for its readers (write after read)") {
    Program p;
    p.commands = {add(0, 64, 128), add(128, 128, 192), add(256, 256, 0), add(0, 0, 320)};
    cardsim::lower::add_dependencies(p);
    REQUIRE(p.commands[2].deps == std::vector<std::uint32_t>{0}); // overwrites what command 0 read
    REQUIRE(p.commands[3].deps == std::vector<std::uint32_t>{2});
}

TEST_CASE("random streams: every pair of conflicting commands is ordered through the dependencies") {
    std::mt19937_64 rng(7);
    for (int n = 0; n < 200; ++n) {
        Program p;
        for (int i = 0; i < 40; ++i)
            p.commands.push_back(add(64 * (rng() % 8), 64 * (rng() % 8), 64 * (rng() % 8)));
        cardsim::lower::add_dependencies(p);
        // reach[i][j]: command j is ordered before command i through dependencies.
        std::vector<std::vector<bool>> reach(p.commands.size(), std::vector<bool>(p.commands.size(), false));
        for (std::size_t i = 0; i < p.commands.size(); ++i)
            for (auto d : p.commands[i].deps) {
                REQUIRE(d < i);
                reach[i][d] = true;
                for (std::size_t j = 0; j < i; ++j)
                    if (reach[d][j]) reach[i][j] = true;
            }
        for (std::size_t i = 0; i < p.commands.size(); ++i)
            for (std::size_t j = 0; j < i; ++j) {
                auto& a = p.commands[i].operands;
                auto& b = p.commands[j].operands;
                bool conflict = false;
                for (auto& x : a)
                    for (auto& y : b)
                        if (x.offset == y.offset && (x.access != Access::Read || y.access != Access::Read))
                            conflict = true;
                if (conflict) {
                    INFO("stream " << n << ": commands " << j << " and " << i);
                    REQUIRE(reach[i][j]);
                }
            }
    }
}
