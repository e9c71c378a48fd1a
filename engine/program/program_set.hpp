#pragma once
// A program set: the programs of one lowering for several buckets (lower::lower_set) that run on
// one card, one DDR image and one set of slot-addressed stores, and its file format.
//
// File layout (all integers little-endian):
//   magic "CARDSET\x1a" (8 B), version u32, bucket count u32,
//   bucket count × { length u64, a program file of that many bytes (program.hpp, its own checksum) },
//   checksum xxh64 (seed 0) of every byte before it.
// Which bucket is which is in each program's host map: its token rows (`tokens`), the slots its
// stores hold (the `slots` entry's width) and the positions each slot holds. The buckets are in
// increasing order of token rows; the set's DDR image (PROG.ddr) is every bucket's image.

#include "engine/program/program.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::program {

/// The set file's magic bytes.
inline constexpr char set_magic[8] = {'C', 'A', 'R', 'D', 'S', 'E', 'T', '\x1a'};
/// The set format version this build writes and reads.
inline constexpr std::uint32_t set_version = 1;
/// The most buckets a set holds.
inline constexpr std::size_t max_set_buckets = 64;

/// The buckets of one set, in increasing order of token rows.
struct ProgramSet {
    std::vector<Program> buckets;
    friend bool operator==(const ProgramSet&, const ProgramSet&) = default;
};

/// Why `buckets` cannot share one card, or nothing: each bucket must run on the first bucket's DDR
/// image and card config and have its weights, caches and state regions, and no two program
/// regions may overlap.
std::optional<std::string> share_refusal(std::span<const Program* const> buckets);

/// Why `s` is not a set `cardsim serve` can drive, or nothing: `share_refusal`, and every bucket
/// slot-addressed (a `slots` input) with the first bucket's io region, arena, slot count, positions,
/// vocabulary, model and checkpoint, decoding one token row per sequence slot (one sequence of
/// token rows in its host map), token rows strictly increasing; 1 .. max_set_buckets buckets.
std::optional<std::string> set_refusal(const ProgramSet& s);

/// Whether `bytes` begin with the set file's magic.
bool is_set(std::span<const std::byte> bytes);

/// The set as file bytes.
std::vector<std::byte> encode(const ProgramSet& s);

/// The set in `bytes`, read from `file` (named in errors). Checks the magic, version and checksum
/// first, then each bucket as `decode` does (errors name the bucket), then `set_refusal`; throws
/// cardsim::Error naming the file and the place.
ProgramSet decode_set(std::span<const std::byte> bytes, const std::string& file = "<memory>");

/// Writes `s` to `path` atomically (a temporary file beside it, then a rename).
void write(const ProgramSet& s, const std::filesystem::path& path);

/// Reads and checks the set at `path` (see `decode_set`).
ProgramSet read_set(const std::filesystem::path& path);

/// The token rows of each bucket, as `1,2,4`.
std::string rows_list(const ProgramSet& s);

} // namespace cardsim::program
