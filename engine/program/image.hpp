#pragma once
// The DDR image a program runs on: the bytes lowering puts in the card's memory before the first
// command (quantised weights, 1-D constants), as chunks at addresses, and its file format.
//
// File layout (little-endian): magic "CARDDDR\x1a" (8 B), version u32, chunk count u32, then per
// chunk { address u64, length u64, bytes }, chunks in increasing, non-overlapping address order.

#include "engine/program/image_memory.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace cardsim::program {

/// Bytes at one DDR address.
struct Chunk {
    std::uint64_t address = 0;
    ChunkBytes bytes;
    friend bool operator==(const Chunk&, const Chunk&) = default;
};

/// Everything DDR holds at the start, as chunks sorted by address, never overlapping; bytes no
/// chunk covers are zero.
struct Image {
    std::vector<Chunk> chunks;
    friend bool operator==(const Image&, const Image&) = default;
    /// Total bytes of the chunks.
    std::uint64_t bytes() const;
};

/// The image's file bytes.
std::vector<std::byte> encode(const Image& image);
/// The image in `bytes` from `file`; throws cardsim::Error naming the file and chunk on a
/// truncated file, a wrong magic or version, chunks out of order or overlapping, an address that
/// overflows, or trailing bytes.
Image decode_image(std::span<const std::byte> bytes, const std::string& file = "<memory>");
/// xxh64 (seed 0) of the image's file bytes: the digest a program's header names it by.
std::uint64_t digest(const Image& image);
/// Writes the image atomically (renamed into place, not synced to disk: `load` checks the
/// digest the program names); reads and checks one.
void write(const Image& image, const std::filesystem::path& path);
Image read_image(const std::filesystem::path& path);

} // namespace cardsim::program
