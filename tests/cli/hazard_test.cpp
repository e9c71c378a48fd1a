// The command processor's hazard check (issue 16): lowering never leaves two commands that touch
// the same bytes, one writing, without a dependency path (every shipped model the default or the
// encoder card runs, at every value of every numerics knob, with layer checks too); and a compiled
// program with one dependency removed stops on a race naming both commands, the region and bytes.

#include "engine/program/program.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
using namespace cardsim::program;

TEST_CASE("lowering leaves no race over every shipped model and every numerics knob value") {
    const ScratchDir d("hazard-models");
    struct Model {
        std::string arch, card;
    };
    const std::string encoder = std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    const std::string variants = " --set units.attention.window=true --set units.attention.sinks=true "
                                 "--set units.attention.softcap=true";
    const std::vector<Model> models = {
        {"dense", ""}, {"hybrid", ""}, {"encoder", " --config " + encoder}, {"windowed", variants}};
    const std::vector<std::string> knobs = {"",
                                            " --knob scaling=per_block",
                                            " --knob activations=two",
                                            " --knob state=f16",
                                            " --knob cache=int8",
                                            " --knob cache=int8_hadamard",
                                            " --knob attention=array",
                                            " --check-layers all"};
    for (auto& m : models) {
        auto dir = (d / m.arch).string();
        REQUIRE(run_cardsim("make-model --arch " + m.arch + " --size tiny --seed 4 -o " + dir).code == 0);
        for (auto& k : knobs) {
            // An encoder runs its prompt in one step (it refuses --tokens).
            const std::string tokens = m.arch == "encoder" ? "" : " --tokens 3";
            auto r = run_cardsim("run " + dir + m.card + k + tokens + " --no-reference");
            INFO(m.arch << k << "\n" << r.out);
            CHECK(r.code == 0);
            CHECK_FALSE(contains(r.out, "race"));
            CHECK(contains(r.out, "bit-exact: yes"));
        }
    }
}

TEST_CASE("a compiled program with one dependency removed stops on the race, naming both commands") {
    const ScratchDir d("hazard-removed");
    auto m = (d / "m").string(), prog = (d / "p.cardsim").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 4 -o " + m).code == 0);
    REQUIRE(run_cardsim("compile " + m + " --max-positions 6 -o " + prog).code == 0);
    REQUIRE(run_cardsim("run " + prog + " --tokens 3").code == 0);
    // Command 1 (the first norm) reads what command 0 (the embedding) writes and depends on it
    // alone: without that dependency the two run at once on their own units.
    auto p = read(prog);
    REQUIRE(p.commands[0].opcode == Opcode::Embed);
    REQUIRE(p.commands[1].deps == std::vector<std::uint32_t>{0});
    p.commands[1].deps.clear();
    for (auto& r : p.regions) // a consistent edit: the program region holds the shorter stream
        if (r.kind == Region::Program) r.size = card_bytes(p);
    auto cut = (d / "cut.cardsim").string();
    write(p, cut);
    std::filesystem::copy_file(prog + ".ddr", cut + ".ddr");
    auto r = run_cardsim("run " + cut + " --tokens 3");
    INFO(r.out);
    CHECK(r.code != 0);
    CHECK(contains(r.out, "race at step 0: commands 0 (Embed) and 1 (RmsNorm) are in flight together"));
    CHECK(contains(r.out, "both touch arena+0x"));
    CHECK(contains(r.out, "command 0 writes it (out), command 1 reads it (x)"));
}
