#include "engine/kernels/host_memory.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

namespace cardsim::kernels {
namespace {

constexpr std::uint64_t huge_page = std::uint64_t{2} << 20;
#ifndef MADV_POPULATE_WRITE
constexpr int populate_write = 23; // Linux 5.14; older headers lack the name
#else
constexpr int populate_write = MADV_POPULATE_WRITE;
#endif

std::uint64_t page_size() {
    static const auto bytes = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return bytes;
}

} // namespace

void prepare_pages(std::byte* at, std::uint64_t bytes) {
    // Committing more than half the memory free now could wake the kernel's out-of-memory killer
    // where touching the pages one at a time would let the run end first (or fail alone).
    const auto free_bytes = static_cast<std::uint64_t>(::sysconf(_SC_AVPHYS_PAGES)) * page_size();
    if (bytes == 0 || bytes > free_bytes / 2) return;
    const auto first = reinterpret_cast<std::uintptr_t>(at), end = first + bytes;
    const std::uintptr_t huge_first = (first + huge_page - 1) & ~(huge_page - 1),
                         huge_end = end & ~(huge_page - 1);
    if (huge_first < huge_end)
        ::madvise(reinterpret_cast<void*>(huge_first), huge_end - huge_first, MADV_HUGEPAGE);
    const std::uintptr_t page_first = first & ~(page_size() - 1),
                         page_end = (end + page_size() - 1) & ~(page_size() - 1);
    ::madvise(reinterpret_cast<void*>(page_first), page_end - page_first, populate_write);
}

HostMemory::HostMemory(std::uint64_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    // One huge page more than asked for, so the memory can start on a huge page's boundary.
    mapped_ = (bytes + huge_page - 1) / huge_page * huge_page + huge_page;
    // Reserved without commitment, as a memory file was: an image larger than the host's memory
    // fails (or not) page by page as it is written, not here.
    void* p =
        ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw Error(fmt::format("cannot allocate {} bytes of host memory: {}", bytes, std::strerror(errno)));
    auto start = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned = (start + huge_page - 1) & ~(huge_page - 1);
    // Give back the unaligned head and the tail past the memory's last huge page.
    if (aligned > start) ::munmap(p, aligned - start);
    const std::uint64_t keep = (bytes + huge_page - 1) / huge_page * huge_page;
    const std::uintptr_t tail = aligned + keep, end = start + mapped_;
    if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
    base_ = reinterpret_cast<std::byte*>(aligned);
    mapped_ = keep;
    prepare_pages(base_, size_);
}

HostMemory::~HostMemory() {
    if (base_) ::munmap(base_, mapped_);
}

HostMemory::HostMemory(HostMemory&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HostMemory& HostMemory::operator=(HostMemory&& other) noexcept {
    if (this != &other) {
        if (base_) ::munmap(base_, mapped_);
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, 0);
    }
    return *this;
}

} // namespace cardsim::kernels
