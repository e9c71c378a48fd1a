#include "sim/memory/sparse_store.hpp"

#include "engine/error.hpp"
#include "engine/kernels/host_memory.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace cardsim::sim::memory {
namespace {

/// The mapping's length: the capacity rounded up to whole pages (at least one).
std::uint64_t mapped_bytes(std::uint64_t capacity) {
    const std::uint64_t p = SparseStore::page_bytes();
    return std::max<std::uint64_t>(p, (capacity + p - 1) / p * p);
}

} // namespace

std::uint64_t SparseStore::page_bytes() {
    static const std::uint64_t bytes = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return bytes;
}

SparseStore::SparseStore(std::uint64_t capacity) : capacity_(capacity) {
    void* p = ::mmap(nullptr, mapped_bytes(capacity), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw Error(
            fmt::format("cannot reserve {} bytes of address space for a memory model: {} (a host with "
                        "vm.overcommit_memory = 2 refuses large reservations)",
                        capacity, std::strerror(errno)));
    base_ = static_cast<std::byte*>(p);
}

SparseStore::~SparseStore() {
    if (base_) ::munmap(base_, mapped_bytes(capacity_));
}

SparseStore::SparseStore(SparseStore&& other) noexcept
    : capacity_(std::exchange(other.capacity_, 0)), base_(std::exchange(other.base_, nullptr)) {}

SparseStore& SparseStore::operator=(SparseStore&& other) noexcept {
    if (this != &other) {
        if (base_) ::munmap(base_, mapped_bytes(capacity_));
        capacity_ = std::exchange(other.capacity_, 0);
        base_ = std::exchange(other.base_, nullptr);
    }
    return *this;
}

void SparseStore::read(std::uint64_t address, std::span<std::byte> out) const {
    if (!out.empty()) std::memcpy(out.data(), base_ + address, out.size());
}

void SparseStore::prepare(std::uint64_t address, std::uint64_t length) {
    kernels::prepare_pages(base_ + address, length);
}

void SparseStore::write(std::uint64_t address, std::span<const std::byte> in) {
    if (in.size() >= bulk_bytes) kernels::prepare_pages(base_ + address, in.size());
    if (!in.empty()) std::memcpy(base_ + address, in.data(), in.size());
}

std::uint64_t SparseStore::pages() const {
    const std::uint64_t n = mapped_bytes(capacity_) / page_bytes();
    std::uint64_t resident = 0;
    // mincore over chunks, so the vector stays small for a 32 GiB store.
    constexpr std::uint64_t chunk = 1u << 20;
    std::vector<unsigned char> v(chunk);
    for (std::uint64_t first = 0; first < n; first += chunk) {
        const std::uint64_t count = std::min(chunk, n - first);
        if (::mincore(base_ + first * page_bytes(), count * page_bytes(), v.data()) != 0) continue;
        for (std::uint64_t i = 0; i < count; ++i)
            resident += v[i] & 1;
    }
    return resident;
}

void SparseStore::clear() {
    if (base_) ::madvise(base_, mapped_bytes(capacity_), MADV_DONTNEED); // private anonymous: zeros again
}

} // namespace cardsim::sim::memory
