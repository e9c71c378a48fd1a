// The program file format: a round trip of every opcode, and a clear error for each malformed input.

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/program/program.hpp"
#include "tests/support/program_host.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cstring>
#include <filesystem>
#include <xxhash.h>

using namespace cardsim;
using namespace cardsim::program;

namespace {

/// A program with one command of every opcode, every slot filled (optional operands both present
/// and absent across commands), and a full memory map.
Program every_opcode() {
    Program p;
    p.config_digest = 0x0123456789abcdefull;
    p.image_digest = 0xfedcba9876543210ull;
    p.arena_bytes = 1 << 20;
    p.regions = {{Region::Weights, Space::Ddr, 0, 1 << 24},
                 {Region::Caches, Space::Ddr, 1 << 24, 1 << 22},
                 {Region::State, Space::Ddr, (1 << 24) + (1 << 22), 1 << 20},
                 {Region::Io, Space::Ddr, 1u << 30, 4096},
                 {Region::Program, Space::Ddr, (1u << 30) + 4096, 1 << 16},
                 {Region::Arena, Space::Sram, 0, 1 << 20}};
    for (std::size_t i = 0; i < opcode_count; ++i) {
        auto& s = spec(static_cast<Opcode>(i));
        Command c;
        c.opcode = s.opcode;
        c.unit = s.unit;
        c.flags = static_cast<std::uint32_t>(i) & flag::Defined;
        if (i > 0) c.deps = {static_cast<std::uint32_t>(i - 1)};
        if (i > 2) c.deps.push_back(static_cast<std::uint32_t>(i - 3));
        for (std::size_t k = 0; k < s.operands.size(); ++k) {
            auto& os = s.operands[k];
            if (os.optional && i % 2) {
                c.operands.push_back(Operand{});
                continue;
            }
            Region r = os.access == Access::Read && k == 1 ? Region::Weights : Region::Arena;
            c.operands.push_back(Operand{r, os.access, 64 * (k + i), 64 * (k + 1)});
        }
        for (std::size_t k = 0; k < s.dims.size(); ++k)
            c.dims.push_back(k + 1 + i);
        for (std::size_t k = 0; k < s.params.size(); ++k)
            c.params.push_back(f64_bits(0.5 + double(k)));
        p.commands.push_back(c);
    }
    test::add_host(p);
    p.host.checkpoint_digest = 0x1122334455667788ull;
    p.host.max_positions = 32;
    auto output = [&](IoRole role, std::uint64_t width, std::uint64_t offset) {
        IoEntry e;
        e.role = role;
        e.value = static_cast<std::uint32_t>(offset / 64);
        e.width = width;
        e.offset = offset;
        e.bytes = 4 * width;
        p.host.io.push_back(e);
        return &p.host.io.back();
    };
    output(IoRole::Logits, 8, 512);
    output(IoRole::Next, 1, 576);
    auto* probe = output(IoRole::Probe, 4, 640);
    probe->after = 3;
    probe->layer = 1;
    return p;
}

/// Offset of io entry `index`'s first byte in `encode(p)`.
std::size_t io_entry_offset(const Program& p, std::size_t index) {
    return card_bytes(p) + 6 * 8 + 4 + 4 + p.host.model.size() + 16 + 40 * index; // 16: the system
}

/// The file bytes of `p` without the checksum that ends them.
std::vector<std::byte> unsealed(const Program& p) {
    auto b = encode(p);
    // erase, not resize: gcc 12 at -O1 with ASan (scripts/test.sh --sanitize) sees resize's grow
    // path with a wrapped size and stops the build on -Wstringop-overflow.
    b.erase(b.end() - 8, b.end());
    return b;
}

/// `body` with the checksum of its bytes after it, as `encode` ends a file.
std::vector<std::byte> sealed(std::vector<std::byte> body) {
    std::uint64_t h = XXH64(body.data(), body.size(), 0);
    for (int i = 0; i < 8; ++i)
        body.push_back(std::byte((h >> (8 * i)) & 0xff));
    return body;
}

/// The error message decoding the file of `body` and a valid checksum gives, so the checks after
/// the checksum are reached (fails the test when it decodes).
std::string error_of(const std::vector<std::byte>& body) {
    try {
        decode(sealed(body), "test.cardsim");
    } catch (const Error& e) {
        return e.what();
    }
    FAIL("decoded a malformed program");
    return {};
}

/// Offset of command `index`'s first byte in `encode(p)`.
std::size_t command_offset(const Program& p, std::size_t index) {
    Program head = p;
    head.commands.resize(index);
    return card_bytes(head);
}

bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("every opcode round-trips through the file format") {
    auto p = every_opcode();
    auto bytes = encode(p);
    auto back = decode(bytes);
    REQUIRE(back == p);
    REQUIRE(encode(back) == bytes);
    REQUIRE(digest(back) == digest(p));
}

TEST_CASE("a program written to disk reads back identically and the write is atomic") {
    auto p = every_opcode();
    cardsim::test::ScratchDir dir("program-format");
    auto path = dir / "p.cardsim";
    write(p, path);
    write(p, path); // over an existing file
    REQUIRE(decode(cardsim::io::read_bytes(path)) == p);
    REQUIRE(dir.files() == std::vector<std::string>{"p.cardsim"}); // no temporary left
}

TEST_CASE("disassembly names every operand, dim and param") {
    auto p = every_opcode();
    auto line = disassemble(p, static_cast<std::size_t>(Opcode::Matvec));
    REQUIRE(contains(line, "matvec"));
    REQUIRE(contains(line, "Matvec"));
    REQUIRE(contains(line, "w=weights+"));
    REQUIRE(contains(line, "rows="));
    REQUIRE(contains(line, "k="));
    auto attend = disassemble(p, static_cast<std::size_t>(Opcode::Attend));
    REQUIRE(contains(attend, "scale=0.5"));
    REQUIRE(contains(attend, "softcap=1.5"));
    REQUIRE(contains(describe_header(p), "arena 1048576 bytes"));
}

TEST_CASE("a truncated file names what is missing") {
    auto bytes = unsealed(every_opcode());
    REQUIRE(contains(error_of({bytes.begin(), bytes.begin() + 10}), "truncated header"));
    auto p = every_opcode();
    auto cut = command_offset(p, 5) + 7;
    auto msg = error_of({bytes.begin(), bytes.begin() + static_cast<long>(cut)});
    REQUIRE(contains(msg, "test.cardsim"));
    REQUIRE(contains(msg, "command 5"));
    REQUIRE(contains(msg, "truncated"));
}

TEST_CASE("a wrong magic or version is refused") {
    auto bytes = unsealed(every_opcode());
    auto bad = bytes;
    bad[0] = std::byte{'X'};
    REQUIRE(contains(error_of(bad), "wrong magic"));
    bad = bytes;
    bad[8] = std::byte{9};
    REQUIRE(contains(error_of(bad), "format version 9, this build reads version 4"));
}

TEST_CASE("a version 1 file (before the host map) is refused with what to do") {
    auto p = every_opcode();
    auto bytes = unsealed(p);
    bytes.resize(card_bytes(p)); // a version 1 file was the card part alone
    bytes[8] = std::byte{1};
    auto msg = error_of(bytes);
    REQUIRE(contains(msg, "test.cardsim: header: format version 1, this build reads version 4"));
    REQUIRE(contains(msg, "compile the model again"));
}

TEST_CASE("the host map round-trips and is outside what the card fetches and the digest") {
    auto p = every_opcode();
    auto back = decode(encode(p));
    REQUIRE(back.host == p.host);
    REQUIRE(back.host.io.size() == 9);
    REQUIRE(back.host.io.back().layer == 1);
    REQUIRE(encode(p).size() == card_bytes(p) + 56 + p.host.model.size() + 16 + 40 * p.host.io.size() + 8);
    // The system a card belongs to round-trips, and is outside the digest too.
    auto card = p;
    card.host.tensor = 2;
    card.host.stages = 3;
    card.host.card = 5;
    card.host.experts = true;
    REQUIRE(decode(encode(card)).host == card.host);
    REQUIRE(digest(card) == digest(p));
    REQUIRE(contains(describe_header(card), "card 5 of 6: 2 tensor ranks × 3 pipeline stages, experts split by index"));
    // The digest is the card part's: another checkpoint digest or model name leaves it.
    auto q = p;
    q.host.checkpoint_digest = 7;
    q.host.model = "another";
    REQUIRE(encode(q) != encode(p));
    REQUIRE(digest(q) == digest(p));
    // A command is in it.
    q = p;
    q.commands[2].dims[0] += 1;
    REQUIRE(digest(q) != digest(p));
    REQUIRE(p.host.entry(IoRole::Logits)->width == 8);
    REQUIRE(p.host.entry(IoRole::Probe) == nullptr); // probes are many: `entry` names inputs and outputs
    REQUIRE(contains(describe_header(p), "probe         io+0x280[16] value=10 tokens×4 after op 3 layer 1"));
}

TEST_CASE("a malformed host map is refused naming the entry and what was expected") {
    auto p = every_opcode();
    auto bytes = unsealed(p);
    // Truncated: in the head, and in the entries.
    REQUIRE(contains(error_of({bytes.begin(), bytes.begin() + std::ptrdiff_t(card_bytes(p) + 10)}),
                     "host map: truncated host map"));
    REQUIRE(contains(error_of({bytes.begin(), bytes.end() - 3}), "cannot fit"));
    auto bad = bytes;
    bad[io_entry_offset(p, 2)] = std::byte{42};
    REQUIRE(contains(error_of(bad), "host map, io entry 2: unknown role 42"));
    bad = bytes;
    bad[io_entry_offset(p, 6) + 1] = std::byte{3};
    REQUIRE(contains(error_of(bad), "io entry 6: unknown row kind 3"));
    bad = bytes;
    bad[io_entry_offset(p, 6) + 2] = std::byte{1};
    REQUIRE(contains(error_of(bad), "reserved byte"));
    auto with = [&](auto change) {
        auto q = p;
        change(q);
        return error_of(unsealed(q));
    };
    REQUIRE(contains(with([](Program& q) { q.host.seqs = 0; }), "the bucket has 1 tokens and 0 sequences"));
    REQUIRE(contains(with([](Program& q) { q.host.stages = 0; }), "a system of 1 tensor ranks × 0 stages"));
    REQUIRE(
        contains(with([](Program& q) { q.host.card = 2, q.host.tensor = 2; }), "card 2 of a system of 2"));
    bad = bytes;
    bad[io_entry_offset(p, 0) - 4] = std::byte{2}; // the experts flag
    REQUIRE(contains(error_of(bad), "the experts flag is 2, expected 0 or 1"));
    REQUIRE(contains(with([](Program& q) { q.host.max_positions = 0; }), "the caches hold 0 positions"));
    REQUIRE(contains(with([](Program& q) { q.host.model = "bad\nname"; }), "expected printable ASCII"));
    REQUIRE(contains(with([](Program& q) { q.host.model = std::string(300, 'a'); }), "at most 256"));
    REQUIRE(contains(with([](Program& q) { q.host.io.erase(q.host.io.begin() + 3); }),
                     "host map: has no qtype entry, every input needs one"));
    REQUIRE(contains(with([](Program& q) { q.host.io[1].role = IoRole::Ids; }),
                     "io entry 1 (ids): repeats an input"));
    REQUIRE(contains(with([](Program& q) { q.host.io[7].role = IoRole::Logits; }),
                     "io entry 7 (logits): repeats an output of the graph"));
    REQUIRE(contains(with([](Program& q) { q.host.io[0].bytes = 8; }),
                     "io entry 0 (ids): has 8 bytes, the bucket needs 4 (1 u32)"));
    REQUIRE(contains(with([](Program& q) { q.host.io[0].value = 3; }), "an input has no value"));
    REQUIRE(
        contains(with([](Program& q) { q.host.io[6].value = no_index; }), "an output names no graph value"));
    REQUIRE(contains(with([](Program& q) { q.host.io[6].layer = 2; }), "only probes have"));
    REQUIRE(contains(with([](Program& q) { q.host.io[8].after = no_index; }), "names no op it stands after"));
    REQUIRE(
        contains(with([](Program& q) { q.host.io[6].bytes = 16; }), "has 16 bytes, 1 rows of 8 f32 need 32"));
    REQUIRE(contains(with([](Program& q) { q.host.io[6].width = 0; }), "width 0 is not in 1 .. 2^32"));
    REQUIRE(contains(with([](Program& q) { q.host.io[6].offset = 4090; }),
                     "io+0xffa (32 bytes) lies outside the io region of 4096 bytes"));
    REQUIRE(contains(with([](Program& q) { q.host.io[7].offset = 520; }),
                     "io entry 7 (next): overlaps io entry 6"));
    REQUIRE(contains(
        with([](Program& q) { std::erase_if(q.regions, [](auto& r) { return r.kind == Region::Io; }); }),
        "the memory map has no io region"));
}

TEST_CASE("an unknown opcode, unit, region or flag names the command") {
    auto p = every_opcode();
    auto bytes = unsealed(p);
    auto at = command_offset(p, 3);
    auto bad = bytes;
    bad[at] = std::byte{0xee};
    auto msg = error_of(bad);
    REQUIRE(contains(msg, "command 3"));
    REQUIRE(contains(msg, "unknown opcode 238"));
    bad = bytes;
    bad[at + 2] = std::byte{200};
    REQUIRE(contains(error_of(bad), "unknown unit 200"));
    auto q = p;
    q.commands[4].flags = 1u << 30;
    REQUIRE(contains(error_of(unsealed(q)), "undefined flag bits"));
    q = p;
    q.commands[4].operands[0].region = Region::Program;
    q.regions.pop_back(); // drop the arena too, so operands in it name a missing region
    REQUIRE(contains(error_of(unsealed(q)), "which the memory map lacks"));
}

TEST_CASE("an operand outside its region is refused with the command, operand and sizes") {
    auto p = every_opcode();
    auto i = static_cast<std::size_t>(Opcode::Matvec);
    p.commands[i].operands[1].offset = (1 << 24) - 32;
    auto msg = error_of(unsealed(p));
    REQUIRE(contains(msg, fmt::format("command {} (Matvec)", i)));
    REQUIRE(contains(msg, "operand 1 (w)"));
    REQUIRE(contains(msg, "outside its region of 16777216 bytes"));
    p.commands[i].operands[1].offset = ~std::uint64_t{0} - 8; // offset + bytes overflows
    REQUIRE(contains(error_of(unsealed(p)), "outside its region"));
}

TEST_CASE("counts that disagree with the opcode table or overrun the file are refused") {
    auto p = every_opcode();
    auto q = p;
    q.commands[2].dims.pop_back();
    REQUIRE(contains(error_of(unsealed(q)), "dims, RmsNorm takes 3"));
    q = p;
    q.commands[2].operands.pop_back();
    REQUIRE(contains(error_of(unsealed(q)), "operands, RmsNorm takes 3"));
    auto bytes = unsealed(p);
    auto huge = bytes;
    huge[8 + 4 + 4 + 24 + 4] = std::byte{0xff}; // command count's low byte
    huge[8 + 4 + 4 + 24 + 7] = std::byte{0x7f}; // ... and its high byte
    REQUIRE(contains(error_of(huge), "cannot fit"));
    auto tail = bytes;
    tail.push_back(std::byte{0});
    REQUIRE(contains(error_of(tail), "1 bytes after the host map"));
}

TEST_CASE("an absent operand the opcode needs, a wrong access or a forward dependency is refused") {
    auto p = every_opcode();
    auto q = p;
    q.commands[4].operands[0] = Operand{};
    REQUIRE(contains(error_of(unsealed(q)), "operand 0 (x) is absent"));
    q = p;
    q.commands[4].operands[0].access = Access::Write;
    REQUIRE(contains(error_of(unsealed(q)), "is accessed w, Matvec accesses it r"));
    q = p;
    q.commands[4].deps = {4};
    REQUIRE(contains(error_of(unsealed(q)), "depends on command 4, which is not earlier"));
}

TEST_CASE("overlapping or overflowing regions and nonzero reserved bytes are refused") {
    auto p = every_opcode();
    auto q = p;
    q.regions[1].base = 100; // caches over the weights, both in DDR
    REQUIRE(contains(error_of(unsealed(q)), "regions weights and caches overlap in ddr"));
    q = p;
    q.regions[0].base = ~std::uint64_t{0};
    REQUIRE(contains(error_of(unsealed(q)), "overflows"));
    auto bytes = unsealed(p);
    bytes[12] = std::byte{1};
    REQUIRE(contains(error_of(bytes), "reserved byte at offset 12"));
}

TEST_CASE("a flipped bit or a cut anywhere in the file fails the whole-file checksum first") {
    const auto bytes = encode(every_opcode());
    for (std::size_t at :
         {std::size_t{20}, command_offset(every_opcode(), 3) + 17, bytes.size() - 30, bytes.size() - 1}) {
        auto bad = bytes;
        bad[at] ^= std::byte{0x10};
        INFO("byte " << at);
        try {
            decode(bad, "test.cardsim");
            FAIL("decoded a damaged program");
        } catch (const Error& e) {
            REQUIRE(contains(e.what(), "test.cardsim: checksum: the file ends in checksum"));
            REQUIRE(contains(e.what(), "damaged or truncated"));
        }
    }
    std::vector<std::byte> cut(bytes.begin(), bytes.end() - 100);
    REQUIRE_THROWS_WITH(decode(cut, "test.cardsim"), Catch::Contains("damaged or truncated"));
}
