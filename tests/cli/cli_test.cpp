// The cardsim executable as a user runs it: help, exit codes, `disasm`, `layout`.

#include "engine/program/program.hpp"
#include "engine/program/slots.hpp"

#include <catch2/catch.hpp>

#include "tests/support/program_host.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <utility>

using cardsim::test::contains;
using cardsim::test::run_cardsim;

TEST_CASE("cardsim --help lists the subcommands and each has its own help") {
    auto r = run_cardsim("--help");
    REQUIRE(r.code == 0);
    for (auto c : {"disasm", "layout", "demo"})
        REQUIRE(contains(r.out, c));
    auto d = run_cardsim("disasm --help");
    REQUIRE(d.code == 0);
    REQUIRE(contains(d.out, "usage: cardsim disasm"));
}

TEST_CASE("calibrate's help offers only the options it takes (no --set or --knob, which it refuses)") {
    auto r = run_cardsim("calibrate --help");
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "--config"));
    REQUIRE_FALSE(contains(r.out, "--set"));
    REQUIRE_FALSE(contains(r.out, "--knob"));
}

TEST_CASE("an unknown command or option is bad input, exit code 2") {
    REQUIRE(run_cardsim("frobnicate").code == 2);
    auto r = run_cardsim("layout --bogus");
    REQUIRE(r.code == 2);
    REQUIRE(contains(r.out, "bogus"));
}

TEST_CASE("disasm prints one line per command and refuses a malformed file by name") {
    using namespace cardsim::program;
    const cardsim::test::ScratchDir dir("cli-disasm");
    Program p;
    p.arena_bytes = 4096;
    p.regions = {{Region::Weights, Space::Ddr, 0, 1 << 20}, {Region::Arena, Space::Sram, 0, 4096}};
    Command c;
    c.unit = Unit::Matvec;
    cardsim::program::fill<cardsim::program::slots::Matvec>(
        c,
        {.x = {Region::Arena, Access::Read, 0, 256},
         .w = {Region::Weights, Access::Read, 0, 65536},
         .out = {Region::Arena, Access::ReadWrite, 256, 512}},
        {.rows = 1, .n = 128, .k = 64, .n1 = 128, .n2 = 0});
    p.commands = {c, c};
    p.commands[1].deps = {0};
    cardsim::test::add_host(p);
    write(p, dir / "ok.cardsim");
    auto r = run_cardsim("disasm " + (dir / "ok.cardsim").string());
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "     0  matvec         Matvec"));
    REQUIRE(contains(r.out, "     1  matvec         Matvec        deps=0"));
    REQUIRE(contains(r.out, "model test program"));
    REQUIRE(contains(r.out, "ids           io+0x0[4]"));
    auto bytes = encode(p);
    bytes.resize(card_bytes(p) - 5); // into the last command
    {
        std::FILE* f = std::fopen((dir / "cut.cardsim").c_str(), "wb");
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
    auto bad = run_cardsim("disasm " + (dir / "cut.cardsim").string());
    REQUIRE(bad.code == 2);
    REQUIRE(contains(bad.out, "cut.cardsim: checksum: "));
    REQUIRE(contains(bad.out, "damaged or truncated"));
}

TEST_CASE("layout prints every value of the built-in graph and the arena size") {
    auto r = run_cardsim("layout --graph decoder --layers 1 --tokens 2");
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "layer0.q"));
    REQUIRE(contains(r.out, "arena "));
    REQUIRE(run_cardsim("layout --graph nope").code == 2);
}

TEST_CASE("numerics refuses an option the mode asked for does not use, naming it") {
    // --sweep checks the functions alone: --all and --knob do nothing there (the bad knob is not the
    // reason: --knob is refused before it is read).
    auto all = run_cardsim("numerics --sweep exp --stride 100000 --all --knob cache=int8 --knob bogus=zz");
    CHECK(all.code == 2);
    CHECK(contains(all.out, "cardsim numerics --sweep: --all does nothing there"));
    auto knob = run_cardsim("numerics --sweep exp --stride 100000 --knob cache=int8");
    CHECK(knob.code == 2);
    CHECK(contains(knob.out, "cardsim numerics --sweep: --knob does nothing there"));
    // --all prints every knob point: --knob does nothing there.
    auto every = run_cardsim("numerics --all --knob cache=int8 --knob bogus=zzz");
    CHECK(every.code == 2);
    CHECK(contains(every.out, "cardsim numerics --all: --knob does nothing there"));
    // --stride and --threads set the sweep: without --sweep they do nothing, whatever their value.
    const std::pair<const char*, const char*> unused[] = {{"--stride 7 --threads 3", "--stride"},
                                                          {"--stride 0", "--stride"},
                                                          {"--threads 3 --knob cache=int8", "--threads"},
                                                          {"--all --threads 2", "--threads"}};
    for (const auto& [args, name] : unused) {
        INFO(args);
        auto r = run_cardsim(std::string("numerics ") + args);
        CHECK(r.code == 2);
        CHECK(contains(r.out, std::string("cardsim numerics: ") + name + " does nothing without --sweep"));
    }
    // Each is still taken in the mode that uses it.
    auto swept = run_cardsim("numerics --sweep exp --stride 100000 --threads 2");
    CHECK(swept.code == 0);
    CHECK(contains(swept.out, "0 not correctly rounded"));
    CHECK(run_cardsim("numerics --sweep exp --stride 0").code == 2);
    auto point = run_cardsim("numerics --knob cache=int8");
    CHECK(point.code == 0);
    CHECK(contains(point.out, "cache=int8"));
    CHECK(run_cardsim("numerics --all").code == 0);
}

TEST_CASE("config --reference refuses the card options, which it does not use, naming them") {
    for (const char* option :
         {"--config /nonexistent.toml", "--set memory.ddr_channels=2", "--knob cache=int8"}) {
        INFO(option);
        auto r = run_cardsim(std::string("config --reference ") + option);
        CHECK(r.code == 2);
        const std::string name = std::string(option).substr(0, std::string(option).find(' '));
        CHECK(contains(r.out, "cardsim config --reference: " + name + " does nothing there"));
    }
    auto reference = run_cardsim("config --reference");
    CHECK(reference.code == 0);
    CHECK(contains(reference.out, "# Card config reference"));
    // Without --reference the card options are taken.
    auto knob = run_cardsim("config --knob cache=int8");
    CHECK(knob.code == 0);
    CHECK(contains(knob.out, "numerics.cache = \"int8\""));
}

TEST_CASE("make-model removes the temporary folder a killed make-model of the same output left, not a "
          "live one's") {
    cardsim::test::ScratchDir d("make-model-stale");
    // A process that no longer exists (pid 999999999 is past any pid_max) and a live one (this test).
    const auto stale = d / ".m.tmp999999999", live = d / (".m.tmp" + std::to_string(::getpid()));
    for (const auto& dir : {stale, live}) {
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "model.safetensors") << "partial";
    }
    auto r = run_cardsim("make-model --arch dense --size tiny -o " + (d / "m").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK_FALSE(std::filesystem::exists(stale));
    CHECK(std::filesystem::exists(live / "model.safetensors"));
    CHECK(std::filesystem::exists(d / "m" / "config.json"));
}
