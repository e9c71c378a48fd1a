#pragma once
// The bytes of a large memory, allocated a page at a time on first write.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace cardsim::sim::memory {

/// A sparse byte store of `capacity` bytes: a page (64 KiB) is allocated when first written;
/// never-written bytes read as zero. Only a table of page pointers (8 bytes per page) is
/// allocated up front, so an 8 GiB channel costs 1 MiB until it holds data.
class SparseStore {
public:
    static constexpr std::uint64_t page_bytes = 64 * 1024;

    explicit SparseStore(std::uint64_t capacity);
    /// Copies `out.size()` bytes from `address` (inside the capacity) into `out`.
    void read(std::uint64_t address, std::span<std::byte> out) const;
    /// Copies `in` to `address` (inside the capacity), allocating the pages it touches.
    void write(std::uint64_t address, std::span<const std::byte> in);
    std::uint64_t capacity() const { return capacity_; }
    /// Pages allocated so far.
    std::uint64_t pages() const { return allocated_; }
    /// Drops every page (all bytes read as zero again).
    void clear();

private:
    using Page = std::unique_ptr<std::byte[]>;
    std::uint64_t capacity_;
    std::vector<Page> pages_;
    std::uint64_t allocated_ = 0;
};

} // namespace cardsim::sim::memory
