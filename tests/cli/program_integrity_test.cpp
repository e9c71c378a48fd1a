// A compiled program that was damaged or edited never runs: a flipped bit anywhere fails the
// whole-file checksum; a program re-encoded (a valid checksum) with a command's dims out of range,
// host-map fields past what its commands hold, or a header disagreeing with its regions is refused
// naming the file, the command or field and what was expected, instead of crashing the card or the
// golden executor (issue 16).

#include "engine/program/program.hpp"
#include "engine/program/slots.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
using namespace cardsim::program;

namespace {

/// A tiny hybrid checkpoint in `d` and its program compiled for a 4-token prompt and 3 tokens.
struct Compiled {
    std::string model, prog;
};
Compiled compiled(const ScratchDir& d) {
    Compiled c{(d / "m").string(), (d / "p.cardsim").string()};
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 3 -o " + c.model).code == 0);
    REQUIRE(run_cardsim("compile " + c.model + " --max-positions 6 -o " + c.prog).code == 0);
    return c;
}

/// Writes `p` changed by `edit` (encoded with a valid checksum) beside the original, with the
/// original's image, and returns its path.
std::string edited(const ScratchDir& d, const Compiled& c, const std::string& name,
                   const std::function<void(Program&)>& edit) {
    auto p = decode([&] {
        std::ifstream in(c.prog, std::ios::binary);
        std::vector<char> b((std::istreambuf_iterator<char>(in)), {});
        std::vector<std::byte> out(b.size());
        std::memcpy(out.data(), b.data(), b.size());
        return out;
    }());
    edit(p);
    auto path = (d / name).string();
    write(p, path);
    std::filesystem::copy_file(c.prog + ".ddr", path + ".ddr");
    return path;
}

/// The index of the first command of opcode `op`.
std::size_t first(const Program& p, Opcode op) {
    for (std::size_t i = 0; i < p.commands.size(); ++i)
        if (p.commands[i].opcode == op) return i;
    FAIL("no command of the opcode");
    return 0;
}

/// Runs `prog` and requires a refusal (exit 2) whose message has every one of `parts`.
void refused(const std::string& prog, std::initializer_list<std::string> parts,
             const std::string& extra = "") {
    auto r = run_cardsim("run " + prog + " --tokens 3 " + extra);
    INFO(r.out);
    CHECK(r.code == 2);
    for (auto& part : parts)
        CHECK(contains(r.out, part));
}

} // namespace

TEST_CASE("a bit flipped anywhere in a program file is refused by its whole-file checksum") {
    const ScratchDir d("integrity-checksum");
    auto c = compiled(d);
    std::ifstream in(c.prog, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    REQUIRE(run_cardsim("run " + c.prog + " --tokens 3").code == 0);
    // A bit of the first dependency list (where command 1 starts: the card part of a program of
    // its first command, then its 16-byte head), a host-map bit and the checksum's last byte.
    auto p = read(c.prog);
    REQUIRE(p.commands.size() > 1);
    REQUIRE_FALSE(p.commands[1].deps.empty());
    auto prefix = p;
    prefix.commands.resize(1);
    const std::size_t places[] = {static_cast<std::size_t>(card_bytes(prefix)) + 16,
                                  static_cast<std::size_t>(card_bytes(p)) + 9, bytes.size() - 1};
    for (auto at : places) {
        auto damaged = bytes;
        damaged[at] = char(damaged[at] ^ 0x04);
        auto path = (d / ("flip" + std::to_string(at))).string();
        std::ofstream(path, std::ios::binary) << damaged;
        std::filesystem::copy_file(c.prog + ".ddr", path + ".ddr");
        INFO("byte " << at);
        refused(path, {path, "checksum", "damaged"});
    }
}

TEST_CASE("a matvec whose n1 exceeds n is refused naming the command and its dims, not run") {
    const ScratchDir d("integrity-matvec");
    auto c = compiled(d);
    std::size_t index = 0;
    auto prog = edited(d, c, "n1.cardsim", [&](Program& p) {
        index = first(p, Opcode::Matvec);
        auto& dims = p.commands[index].dims;
        dims[cardsim::program::at(slots::Matvec::Dim::n1)] =
            dims[cardsim::program::at(slots::Matvec::Dim::n)] + 5;
    });
    refused(prog, {"command " + std::to_string(index) + " (Matvec)", "n1", "exceed n"});
}

TEST_CASE("a rotation with its rotary and head dims swapped is refused naming the dims") {
    const ScratchDir d("integrity-rotate");
    auto c = compiled(d);
    auto prog = edited(d, c, "rot.cardsim", [&](Program& p) {
        auto& dims = p.commands[first(p, Opcode::Rotate)].dims;
        std::swap(dims[cardsim::program::at(slots::Rotate::Dim::head_dim)],
                  dims[cardsim::program::at(slots::Rotate::Dim::rotary_dim)]);
        dims[cardsim::program::at(slots::Rotate::Dim::rotary_dim)] += 2;
    });
    refused(prog, {"(Rotate)", "rotary dim"});
}

TEST_CASE("host map positions and vocabulary that the commands do not hold are refused, not trusted") {
    const ScratchDir d("integrity-host");
    auto c = compiled(d);
    struct Case {
        const char* name;
        std::function<void(Program&)> edit;
        std::string expect;
    };
    const Case cases[] = {
        {"positions-huge", [](Program& p) { p.host.max_positions = 1ull << 63; }, "max positions"},
        {"positions-past-caches", [](Program& p) { p.host.max_positions = 64; },
         "the command's cache holds 6"},
        {"vocab-huge", [](Program& p) { p.host.vocab = 1ull << 40; }, "vocab"},
        {"vocab-0", [](Program& p) { p.host.vocab = 0; }, "vocab 0"},
        {"vocab-1", [](Program& p) { p.host.vocab = 1; }, "vocab 1"},
        {"arena-0", [](Program& p) { p.arena_bytes = 0; }, "header: arena 0 bytes"},
        {"arena-1", [](Program& p) { p.arena_bytes = 1; }, "header: arena 1 bytes"},
        {"arena-max", [](Program& p) { p.arena_bytes = ~0ull; }, "header: arena"},
    };
    for (auto& k : cases) {
        INFO(k.name);
        auto prog = edited(d, c, std::string(k.name) + ".cardsim", k.edit);
        refused(prog, {prog, k.expect});
        // With the checkpoint too (the golden executor would use the host map's fields).
        refused(prog, {prog, k.expect}, "--model " + c.model);
    }
}
