#pragma once
// The bytes of a large memory, committed a page at a time on first write.

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::sim::memory {

/// A sparse byte store of `capacity` bytes: one anonymous mapping reserved without commitment
/// (MAP_NORESERVE), so the operating system commits a page only when it is first written and
/// never-written bytes read as zero; a 32 GiB DDR costs address space, not memory, until it holds
/// data. Being one mapping, any byte range is contiguous in host memory: `data` hands it out for
/// direct access (TLM-2.0 DMI). Not copyable; movable.
class SparseStore {
public:
    /// Granularity of `pages` (the host's page size).
    static std::uint64_t page_bytes();

    /// Reserves `capacity` bytes (a cardsim::Error when the host refuses the reservation).
    explicit SparseStore(std::uint64_t capacity);
    ~SparseStore();
    SparseStore(SparseStore&& other) noexcept;
    SparseStore& operator=(SparseStore&& other) noexcept;
    SparseStore(const SparseStore&) = delete;
    SparseStore& operator=(const SparseStore&) = delete;

    /// Copies `out.size()` bytes from `address` (inside the capacity) into `out`.
    void read(std::uint64_t address, std::span<std::byte> out) const;
    /// Copies `in` to `address` (inside the capacity), committing the pages it touches: those of a
    /// write of `bulk_bytes` or more are committed first in one call (kernels::prepare_pages), so
    /// loading an image takes no page faults.
    void write(std::uint64_t address, std::span<const std::byte> in);
    /// Commits the pages of [address, address + length) (inside the capacity) in one call, in huge
    /// pages where the host offers them (kernels::prepare_pages): for a range about to be written
    /// whole, such as an image's weights. Bytes already written keep their values.
    void prepare(std::uint64_t address, std::uint64_t length);
    /// Writes from this size on commit their pages up front (2 MiB: a huge page).
    static constexpr std::uint64_t bulk_bytes = std::uint64_t{2} << 20;
    /// The bytes [address, address + length) in place (inside the capacity).
    std::span<std::byte> data(std::uint64_t address, std::uint64_t length) {
        return {base_ + address, static_cast<std::size_t>(length)};
    }
    std::span<const std::byte> data(std::uint64_t address, std::uint64_t length) const {
        return {base_ + address, static_cast<std::size_t>(length)};
    }
    /// The first byte of the store (for DMI grants).
    std::byte* base() { return base_; }
    std::uint64_t capacity() const { return capacity_; }
    /// Pages resident in host memory now (written pages; never-written ones stay out).
    std::uint64_t pages() const;
    /// Gives every page back (all bytes read as zero again).
    void clear();

private:
    std::uint64_t capacity_ = 0;
    std::byte* base_ = nullptr;
};

} // namespace cardsim::sim::memory
