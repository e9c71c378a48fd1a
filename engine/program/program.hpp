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
/// The format version this build writes and reads.
inline constexpr std::uint32_t version = 1;

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

/// A whole program.
struct Program {
    std::uint64_t config_digest = 0; ///< xxh64 of the card config it was compiled for
    std::uint64_t image_digest = 0;  ///< xxh64 of the DDR image it runs on
    std::uint64_t arena_bytes = 0;   ///< the activation arena's size
    std::vector<RegionMap> regions;  ///< the memory map, at most one entry per region kind
    std::vector<Command> commands;
    friend bool operator==(const Program&, const Program&) = default;

    /// The map entry of `r`, if the program has one.
    const RegionMap* region(Region r) const;
};

/// A parameter's f64 value as stored, and back.
std::uint64_t f64_bits(double v);
double bits_f64(std::uint64_t bits);

/// The program as file bytes.
std::vector<std::byte> encode(const Program& p);

/// The program in `bytes`, read from `file` (named in errors). Throws cardsim::Error naming the
/// file, the command index and what was expected on: a truncated header or command, a wrong magic
/// or version, a nonzero reserved field, an unknown region kind, space, opcode, unit, access or
/// flag, counts that do not match the opcode's table or that overrun the file, a dependency on a
/// command not earlier than itself, regions that overflow or overlap in one space, an operand in a
/// region the map lacks or outside it, an absent operand the opcode needs, or trailing bytes.
Program decode(std::span<const std::byte> bytes, const std::string& file = "<memory>");

/// Writes `p` to `path` atomically (a temporary file beside it, then a rename).
void write(const Program& p, const std::filesystem::path& path);

/// Reads and checks the program at `path` (see `decode`).
Program read(const std::filesystem::path& path);

/// xxh64 (seed 0) of the program's file bytes: the digest traces name it by.
std::uint64_t digest(const Program& p);

/// One command as a line of text: index, unit, opcode, flags, deps, named operands
/// (`w=weights+0x1000[4096]r`), named dims and params.
std::string disassemble(const Program& p, std::size_t index);

/// The header and memory map as text lines, for `cardsim disasm`.
std::string describe_header(const Program& p);

} // namespace cardsim::program
