#pragma once
// A program for the card: a header (digests, arena size, memory map) and a command stream, and
// its versioned little-endian binary file format.
//
// File layout (all integers little-endian, no padding beyond what is listed):
//   header   magic "CARDSIM\x1a" (8 B), version u32, reserved u32 (0), config digest u64,
//            image digest u64, arena bytes u64, region count u32, command count u32
//   regions  region count × { kind u8, space u8, reserved u16 (0), reserved u32 (0), base u64, size u64 }
//   commands command count × { opcode u16, unit u8, reserved u8 (0), flags u32,
//            deps u16, operands u8, dims u8, params u8, reserved u8 ×3 (0),
//            deps × u32 (indices of earlier commands),
//            operands × { region u8, access u8, reserved u16 (0), reserved u32 (0), offset u64, bytes u64 },
//            dims × u64, params × u64 (f64 bit patterns or integers, by the opcode's table) }
//   host     (version 2) checkpoint digest u64, bucket tokens u64, seqs u64, markers u64,
//            max positions u64, vocab u64, io entry count u32, model name length u32,
//            model name (printable ASCII, no terminator),
//            (version 4) system: tensor ranks u32, pipeline stages u32, card u32, experts u8,
//            reserved u8 ×3 (0) (one card: 1, 1, 0, 0),
//            io entries × { role u8, rows u8, reserved u16 (0), value u32, after u32, layer u32,
//            width u64, offset u64, bytes u64 } (u32 0xffffffff: none); role 10 (slots, optional)
//            is an input whose width is the slot count
//   A stateful command (CacheAppend, Attend, Conv, DeltaStep) whose slot operands are absent
//   leaves them out (`slots`, and Conv's and DeltaStep's `positions` before it: slot_tail of them
//   fewer operands): a program without slots has the bytes of before.
//   checksum (version 3) xxh64 (seed 0) of every byte before it, host map included
// The card fetches the header, the memory map and the commands (the program region holds
// `card_bytes` of them); the host map after them is for the host that drives the program.
// Reading checks every field: see `read`.

#include "engine/program/opcode.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::program {

/// The file's magic bytes.
inline constexpr char magic[8] = {'C', 'A', 'R', 'D', 'S', 'I', 'M', '\x1a'};
/// The format version this build writes and reads. Version 2 added the host map, version 3 the
/// whole-file checksum, version 4 the system a program is a card of; an older file is refused
/// (compile it again).
inline constexpr std::uint32_t version = 4;

/// What a region of the memory map holds.
enum class Region : std::uint8_t {
    None,    ///< an absent optional operand
    Weights, ///< quantised weights, laid out for streaming
    Caches,  ///< attention caches, per layer, in their keep format
    State,   ///< Gated-DeltaNet states and convolution windows
    Arena,   ///< activations (on-chip)
    Io,      ///< inputs (token ids, positions) and outputs read back by the host
    Program, ///< the command stream itself
};
inline constexpr std::size_t region_count = 7;

/// Which memory a region is in.
enum class Space : std::uint8_t { Ddr, Sram };

/// The spelling of a region (`weights`) and of a space (`ddr`).
std::string_view name(Region r);
std::string_view name(Space s);

/// One region of the memory map: where it starts in its space and how long it is, in bytes.
struct RegionMap {
    Region kind = Region::Weights;
    Space space = Space::Ddr;
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    friend bool operator==(const RegionMap&, const RegionMap&) = default;
};

/// One operand of a command: bytes `offset .. offset + bytes` of a region.
struct Operand {
    Region region = Region::None;
    Access access = Access::Read;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    friend bool operator==(const Operand&, const Operand&) = default;
};

/// One command: what to do (`opcode`), on which unit, with which flags, after which earlier
/// commands, on which operands, with which dimensions and parameters (counts per `spec(opcode)`).
struct Command {
    Opcode opcode = Opcode::Copy;
    Unit unit = Unit::Dma;
    std::uint32_t flags = 0;
    std::vector<std::uint32_t> deps;
    std::vector<Operand> operands;
    std::vector<std::uint64_t> dims;
    std::vector<std::uint64_t> params;
    friend bool operator==(const Command&, const Command&) = default;
};

/// What an entry of the host's io map holds: a step input the host writes (u32 each), or a value
/// it reads back after the step (f32 rows).
enum class IoRole : std::uint8_t {
    Ids,          ///< token ids, one per token row
    Positions,    ///< each token row's position in its sequence
    SeqStarts,    ///< each sequence's first token row, then the token count
    Qtype,        ///< each sequence's question type
    MarkerRows,   ///< each marker's token row
    MarkerStarts, ///< each sequence's first marker, then the marker count
    Logits,       ///< the graph's logits
    Act,          ///< the graph's act head
    Next,         ///< the graph's next token per row (an f32 integer)
    Probe,        ///< a value observed inside the step (a layer's output), copied out when it stands
    Slots,        ///< each token row's store sequence (slot); its entry's `width` is the slot count
};
inline constexpr std::size_t io_role_count = 11;

/// Whether role `r` is a step input the host writes (ids .. marker_starts, slots).
constexpr bool is_input(IoRole r) {
    return r < IoRole::Logits || r == IoRole::Slots;
}
/// Whether role `r` is one of the graph's outputs (logits, act, next).
constexpr bool is_graph_output(IoRole r) {
    return r >= IoRole::Logits && r <= IoRole::Next;
}

/// The spelling of a role (`ids`, `logits`, `probe`).
std::string_view name(IoRole r);

/// Which of a bucket's row counts a read-back value has (graph::Rows, as stored).
enum class IoRows : std::uint8_t { Tokens, Seqs, Markers };

/// "None" in the host map's u32 fields.
inline constexpr std::uint32_t no_index = 0xffffffff;

/// One entry of the host's io map: bytes `offset .. offset + bytes` of the io region. Inputs have
/// no value, op, layer or width (but `slots`, whose width is the number of slots the stores hold
/// besides the pad slot, `lower::Options::slots`); outputs and probes name the graph value (its index in the
/// graph the program was compiled from), its rows and width; a probe also names the op after which it stands
/// and the layer whose output it is (or `no_index`).
struct IoEntry {
    IoRole role = IoRole::Ids;
    IoRows rows = IoRows::Tokens;
    std::uint32_t value = no_index;
    std::uint32_t after = no_index;
    std::uint32_t layer = no_index;
    std::uint64_t width = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    friend bool operator==(const IoEntry&, const IoEntry&) = default;
};

/// What a host needs to drive a program without the checkpoint it came from: where the inputs
/// go and the outputs are, the bucket it was lowered for, the ids it accepts, and what it was
/// compiled from (to check a checkpoint given beside it).
struct Host {
    std::uint64_t checkpoint_digest = 0; ///< the checkpoint's digest (0: not recorded)
    std::string model;                   ///< the recognised architecture, as `cardsim run` prints it
    std::uint64_t tokens = 1, seqs = 1, markers = 0; ///< the bucket's row counts
    std::uint64_t max_positions = 1;                 ///< positions each sequence's caches hold
    std::uint64_t vocab = 0;                         ///< token ids are below this (0: no embedding)
    /// The system it is a card of (`cardsim compile --plan`): tensor ranks × pipeline stages, experts
    /// split by index or not, and which card it is. One card: 1 × 1, card 0.
    std::uint32_t tensor = 1, stages = 1, card = 0;
    bool experts = false;
    std::vector<IoEntry> io;
    friend bool operator==(const Host&, const Host&) = default;

    /// The entry of input or output `r` (not probes), if the map has one.
    const IoEntry* entry(IoRole r) const;
    /// The row count of `r` in the bucket.
    std::uint64_t rows(IoRows r) const;
};

/// A whole program.
struct Program {
    std::uint64_t config_digest = 0; ///< xxh64 of the card config it was compiled for
    std::uint64_t image_digest = 0;  ///< xxh64 of the DDR image it runs on
    std::uint64_t arena_bytes = 0;   ///< the activation arena's size
    std::vector<RegionMap> regions;  ///< the memory map, at most one entry per region kind
    std::vector<Command> commands;
    Host host; ///< for the host; the card does not fetch it
    friend bool operator==(const Program&, const Program&) = default;

    /// The map entry of `r`, if the program has one.
    const RegionMap* region(Region r) const;
};

/// A parameter's f64 value as stored, and back.
std::uint64_t f64_bits(double v);
double bits_f64(std::uint64_t bits);

/// The program as file bytes.
std::vector<std::byte> encode(const Program& p);

/// The bytes of the file the card fetches: the header, the memory map and the commands (what the
/// program region holds), without the host map.
std::uint64_t card_bytes(const Program& p);

/// The program in `bytes`, read from `file` (named in errors). Throws cardsim::Error naming the
/// file, the command index and what was expected on: a truncated header or command, a wrong magic
/// or version, a nonzero reserved field, an unknown region kind, space, opcode, unit, access or
/// flag, counts that do not match the opcode's table or that overrun the file, a dependency on a
/// command not earlier than itself, regions that overflow or overlap in one space, an operand in a
/// region the map lacks or outside it, an absent operand the opcode needs, or trailing bytes; and
/// in the host map: a truncated map, an empty bucket, a model name that is not printable text, an
/// unknown role or row kind, an input role missing or repeated, an output repeated, an entry
/// whose size disagrees with the bucket, whose fields its role does not have, that lies outside
/// the io region or overlaps another entry. Before any field past the version it checks the
/// checksum (a damaged or truncated file).
Program decode(std::span<const std::byte> bytes, const std::string& file = "<memory>");

/// Writes `p` to `path` atomically (a temporary file beside it, then a rename).
void write(const Program& p, const std::filesystem::path& path);

/// Reads and checks the program at `path` (see `decode`; `validate` is the semantic check).
Program read(const std::filesystem::path& path);

/// xxh64 (seed 0) of the part of the program file the card fetches (its first `card_bytes`: the
/// header, the memory map and the commands): the digest traces name it by. The host map is not in
/// it, so what the host map records of the checkpoint never changes a trace; and its header is
/// hashed with version 3 in it (the versions since changed the host map only), so a program's digest
/// is the same whatever file version holds it.
std::uint64_t digest(const Program& p);

/// One command as a line of text: index, unit, opcode, flags, deps, named operands
/// (`w=weights+0x1000[4096]r`), named dims and params.
std::string disassemble(const Program& p, std::size_t index);

/// The header and memory map as text lines, for `cardsim disasm`.
std::string describe_header(const Program& p);

} // namespace cardsim::program
