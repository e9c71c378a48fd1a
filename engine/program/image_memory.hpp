#pragma once
// The memory an image's chunks live in: one block of host memory committed up front, or an image
// file's pages mapped in place, and the chunk bytes that refer to it or own their own.

#include "engine/io/mapped_file.hpp"
#include "engine/kernels/host_memory.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <variant>
#include <vector>

namespace cardsim::program {

/// The bytes the chunks of one image are ranges of: host memory whose pages are committed up front,
/// in huge pages where the host offers them (kernels::HostMemory), so packing a gigabyte of weights
/// into them takes no page faults; or part of an image file mapped in place (io::MappedFile): a
/// program's image or a pack cache entry read with no copy, or the file a compile writes its
/// chunks into, read back through the file. Not copyable; shared by its chunks.
class ImageMemory {
public:
    /// A memory of `bytes` zero bytes, or null for none (the chunks then own vectors).
    static std::shared_ptr<ImageMemory> create(std::uint64_t bytes);
    /// A memory that is the mapped file `file`.
    static std::shared_ptr<ImageMemory> of(io::MappedFile file);
    ImageMemory(const ImageMemory&) = delete;
    ImageMemory& operator=(const ImageMemory&) = delete;

    /// The whole memory, in place.
    std::span<std::byte> bytes() const {
        return std::visit([](auto& m) { return m.bytes(); }, memory_);
    }
    /// Whether a pass over the memory should `read` it through its file (a shared mapping, maybe
    /// never touched) rather than take `bytes()` in place.
    bool reads_through_file() const;
    /// Copies [at, at + out.size()) of the memory into `out` (io::MappedFile::read for a file).
    void read(std::uint64_t at, std::span<std::byte> out) const;

private:
    explicit ImageMemory(std::variant<kernels::HostMemory, io::MappedFile> memory)
        : memory_(std::move(memory)) {}
    std::variant<kernels::HostMemory, io::MappedFile> memory_;
};

/// A chunk's bytes: a vector of its own, or a range of an ImageMemory it shares. Either way
/// contiguous and writable in place; two are equal when their bytes are. A value: a copy owns a
/// vector of the same bytes (writing it never reaches the original); a move keeps the sharing.
class ChunkBytes {
public:
    ChunkBytes() = default;
    ChunkBytes(std::vector<std::byte> own) : own_(std::move(own)) {}
    ChunkBytes(const ChunkBytes& other) : own_(other.begin(), other.end()) {}
    ChunkBytes& operator=(const ChunkBytes& other) {
        if (this != &other) *this = ChunkBytes(other);
        return *this;
    }
    ChunkBytes(ChunkBytes&&) noexcept = default;
    ChunkBytes& operator=(ChunkBytes&&) noexcept = default;
    /// `length` bytes from `offset` of `memory` (inside it).
    ChunkBytes(std::shared_ptr<ImageMemory> memory, std::uint64_t offset, std::uint64_t length);

    std::byte* data() { return memory_ ? memory_->bytes().data() + offset_ : own_.data(); }
    const std::byte* data() const { return memory_ ? memory_->bytes().data() + offset_ : own_.data(); }
    std::size_t size() const { return memory_ ? static_cast<std::size_t>(length_) : own_.size(); }
    bool empty() const { return size() == 0; }
    std::byte& operator[](std::size_t i) { return data()[i]; }
    std::byte operator[](std::size_t i) const { return data()[i]; }
    std::byte* begin() { return data(); }
    std::byte* end() { return data() + size(); }
    const std::byte* begin() const { return data(); }
    const std::byte* end() const { return data() + size(); }
    operator std::span<std::byte>() { return {data(), size()}; }
    operator std::span<const std::byte>() const { return {data(), size()}; }

    /// Calls `put(piece)` with the bytes in order: in place, or (when their memory reads through its
    /// file) a piece at a time through a buffer of up to 1 MiB, so a pass over a chunk never touches
    /// pages of a mapping nobody else reads.
    void for_pieces(const std::function<void(std::span<const std::byte>)>& put) const;

    /// The memory the bytes are a range of (null for a vector of their own), and where.
    const ImageMemory* memory() const { return memory_.get(); }
    /// The same, shared: a card's DDR that reads the memory in place keeps it alive.
    std::shared_ptr<const ImageMemory> shared_memory() const { return memory_; }
    std::uint64_t offset() const { return offset_; }

    friend bool operator==(const ChunkBytes& a, const ChunkBytes& b);

private:
    std::vector<std::byte> own_;
    std::shared_ptr<ImageMemory> memory_;
    std::uint64_t offset_ = 0, length_ = 0;
};

} // namespace cardsim::program
