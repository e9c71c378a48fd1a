#pragma once
// The memory an image's chunks live in: a file in memory that a card's DDR model can map
// copy-on-write instead of copying, and the chunk bytes that refer to it or own their own.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace cardsim::program {

/// `bytes` zero bytes in an anonymous memory file (memfd), mapped shared and read-write: the chunks
/// of one image are ranges of it, and a DDR model maps the same pages privately (copy-on-write)
/// rather than copying them, so a run holds the weights once. Not copyable; shared by its chunks.
class ImageMemory {
public:
    /// A memory of `bytes` zero bytes, or null when the host offers no memory file (the chunks then
    /// own vectors).
    static std::shared_ptr<ImageMemory> create(std::uint64_t bytes);
    ~ImageMemory();
    ImageMemory(const ImageMemory&) = delete;
    ImageMemory& operator=(const ImageMemory&) = delete;

    /// The whole memory, in place.
    std::span<std::byte> bytes() const { return {base_, static_cast<std::size_t>(size_)}; }
    /// The memory file, for a mapping of the same pages.
    int fd() const { return fd_; }

private:
    ImageMemory(int fd, std::byte* base, std::uint64_t size) : fd_(fd), base_(base), size_(size) {}
    int fd_ = -1;
    std::byte* base_ = nullptr;
    std::uint64_t size_ = 0;
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

    /// The memory the bytes are a range of (null for a vector of their own), and where.
    const ImageMemory* memory() const { return memory_.get(); }
    std::uint64_t offset() const { return offset_; }

    friend bool operator==(const ChunkBytes& a, const ChunkBytes& b);

private:
    std::vector<std::byte> own_;
    std::shared_ptr<ImageMemory> memory_;
    std::uint64_t offset_ = 0, length_ = 0;
};

} // namespace cardsim::program
