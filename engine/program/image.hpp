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

/// A packed weight matrix lowering placed in an image: the rows of tensor `tensor` its view reads
/// (`rows`, graph::rows_key of the view), whether the matrix is their transpose, and where its
/// bytes are. Lowering's own account, which the golden executor checks before it trusts it.
struct PackedMatrix {
    std::size_t tensor = 0;
    std::string rows;
    bool transposed = false;
    std::uint64_t address = 0, bytes = 0;
};

/// Everything DDR holds at the start, as chunks sorted by address, never overlapping; bytes no
/// chunk covers are zero. `matrices` says which packed matrices lie where; it is not in the file
/// format (an image read from a file has none) and two images are equal when their chunks are.
struct Image {
    std::vector<Chunk> chunks;
    std::vector<PackedMatrix> matrices;
    friend bool operator==(const Image& a, const Image& b) { return a.chunks == b.chunks; }
    /// Total bytes of the chunks.
    std::uint64_t bytes() const;
    /// The bytes [address, address + length) when one chunk holds them all, else empty.
    std::span<const std::byte> find(std::uint64_t address, std::uint64_t length) const;
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
