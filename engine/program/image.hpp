#pragma once
// The DDR image a program runs on: the bytes lowering puts in the card's memory before the first
// command (quantised weights, 1-D constants), as chunks at addresses, and its file format.
//
// File layout, version 2 (little-endian): magic "CARDDDR\x1a" (8 B), version u32, chunk count u32,
// data offset u64; per chunk { address u64, length u64, offset u64 }; zeros up to the data offset;
// then the data area to the file's end: each chunk's bytes at its offset, every other byte zero.
// Chunks are in increasing, non-overlapping address order, their bytes in increasing,
// non-overlapping offset order, and the file ends with the last chunk's bytes. cardsim writes the
// data area as a mirror of the weights region (a chunk at data offset + address, the data offset a
// multiple of 64 KiB) unless the gaps between chunks would be large, so that a file can be packed
// in place and read by mapping it, one range handed to the card's DDR as it is.
// Version 1, still read: magic, version u32, chunk count u32, then per chunk { address u64,
// length u64, bytes }.
//
// An image's digest is of its content, not its file: xxh64 of the version 1 encoding, whatever
// version the file has, so a program names the same image however it was stored.

#include "engine/io/atomic_file.hpp"
#include "engine/program/image_memory.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

struct XXH64_state_s; // xxhash.h's streaming state

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

/// Where a chunk lies in DDR: its address and its length in bytes.
struct Extent {
    std::uint64_t address = 0, length = 0;
    friend bool operator==(const Extent&, const Extent&) = default;
};

/// Where an image file puts its chunks (version 2): the data area's offset, each chunk's offset
/// in the file, and the file's size. `mirrored`: each chunk lies at data offset + its address.
struct FileLayout {
    std::uint64_t data_offset = 0, file_bytes = 0;
    std::vector<std::uint64_t> offsets;
    bool mirrored = false;
};

/// Whether a file should lay chunks at `extents` (in address order) out as a mirror of their
/// addresses: when the bytes no chunk covers below the last chunk's end are at most an eighth of
/// the chunks' bytes plus 1 MiB (always so for lowering's weights, which lie a stripe apart).
bool mirror_fits(std::span<const Extent> extents);

/// The layout cardsim writes for chunks `extents` (in address order): mirrored when mirror_fits,
/// else each chunk right after the previous one.
FileLayout file_layout(std::span<const Extent> extents);

/// Everything DDR holds at the start, as chunks sorted by address, never overlapping; bytes no
/// chunk covers are zero. `matrices` says which packed matrices lie where; it is not in the file
/// format (an image read from a file has none until a shapes-only lowering of the program's graph
/// names them) and two images are equal when their chunks are.
struct Image {
    std::vector<Chunk> chunks;
    std::vector<PackedMatrix> matrices;
    friend bool operator==(const Image& a, const Image& b) { return a.chunks == b.chunks; }
    /// Total bytes of the chunks.
    std::uint64_t bytes() const;
    /// The bytes [address, address + length) when one chunk holds them all, else empty.
    std::span<const std::byte> find(std::uint64_t address, std::uint64_t length) const;
    /// Where each chunk lies.
    std::vector<Extent> extents() const;
};

/// The image's file bytes (version 2, file_layout's layout).
std::vector<std::byte> encode(const Image& image);
/// The first bytes of the image's file up to its data area: header, chunk table and zeros.
std::vector<std::byte> encode_head(const Image& image, const FileLayout& layout);
/// The image in `bytes` (version 1 or 2) from `file`, each chunk owning a copy of its bytes; throws
/// cardsim::Error naming the file and chunk on a truncated file, a wrong magic or version, chunks out
/// of order or overlapping (by address or in the file), an address that overflows, a nonzero byte
/// where the format has zeros, or trailing bytes.
Image decode_image(std::span<const std::byte> bytes, const std::string& file = "<memory>");
/// xxh64 (seed 0) of the image's version 1 encoding: the digest a program's header names it by,
/// the same whichever version its file has.
std::uint64_t digest(const Image& image);

/// `digest` taken a chunk at a time, so it can follow the chunks as they are packed: made for an
/// image of `chunks` chunks, given each in address order (`add`), then read (`value`). Not copyable.
class ImageDigest {
public:
    explicit ImageDigest(std::size_t chunks);
    /// Feeds the next chunk (its bytes read through their file when they lie in one).
    void add(const Chunk& chunk);
    /// The digest of the chunks added, when all were.
    std::uint64_t value() const;

private:
    std::unique_ptr<XXH64_state_s, void (*)(XXH64_state_s*)> state_;
};
/// Writes the image atomically, version 2 (renamed into place, not synced to disk: `load` checks the
/// digest the program names).
void write(const Image& image, const std::filesystem::path& path);
/// The bytes of `image`'s file (as `write` writes them) appended to `file`, not committed.
void write_to(const Image& image, io::AtomicFile& file);
/// Reads and checks the image at `path` (as decode_image does) by mapping it: the chunks are ranges
/// of the file's pages (ImageMemory), not copies, so a version 2 file written as a mirror reaches
/// the card's DDR with no copy at all.
Image read_image(const std::filesystem::path& path);

} // namespace cardsim::program
