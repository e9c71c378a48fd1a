#pragma once
// Large host buffers made ready before use: one system call commits their pages, in 2 MiB pages
// where the kernel offers transparent huge pages, so that first touches take no page faults.

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::kernels {

/// Commits the pages of [at, at + bytes) of a private anonymous mapping for writing, asking for
/// transparent huge pages on its whole 2 MiB blocks first. A first touch of a 4 KiB page costs a
/// fault (several microseconds on a virtual machine with shadow page tables); committing a
/// gigabyte up front in huge pages costs about what zeroing it does. Only a hint: on a kernel
/// without MADV_POPULATE_WRITE (before Linux 5.14) or huge pages, the pages fault in as before.
/// Bytes already written keep their values. A range over half the host's free memory is left to
/// fault in.
void prepare_pages(std::byte* at, std::uint64_t bytes);

/// `bytes` zero bytes of private anonymous host memory, reserved without commitment and then
/// committed up front (`prepare_pages`). Movable, not copyable; a cardsim::Error when the host
/// refuses the address space.
class HostMemory {
public:
    HostMemory() = default;
    explicit HostMemory(std::uint64_t bytes);
    ~HostMemory();
    HostMemory(HostMemory&& other) noexcept;
    HostMemory& operator=(HostMemory&& other) noexcept;
    HostMemory(const HostMemory&) = delete;
    HostMemory& operator=(const HostMemory&) = delete;

    /// The whole memory, in place.
    std::span<std::byte> bytes() const { return {base_, static_cast<std::size_t>(size_)}; }

private:
    std::byte* base_ = nullptr;
    std::uint64_t size_ = 0, mapped_ = 0;
};

} // namespace cardsim::kernels
