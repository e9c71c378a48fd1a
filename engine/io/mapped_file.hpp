#pragma once
// A file's bytes in place: a mapping of the page cache's own pages, committed in one call, so a
// gigabyte the kernel already holds is read with no copy and no fresh memory.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace cardsim::io {

/// How a mapping shares its writes: `Private` reads the file's pages and keeps any write to this
/// process (a copy of the page on first write); `Shared` writes reach the file.
enum class Sharing { Private, Shared };

/// When a mapping's pages are committed: all at once when it is made (no page faults after), or
/// each as it is first touched (a mapping that is mostly read through the file, never touched).
enum class Commit { UpFront, OnTouch };

/// [offset, offset + length) of an open file, mapped readable and writable and, unless told
/// otherwise, committed up front (MADV_POPULATE_READ for a private mapping, MADV_POPULATE_WRITE for
/// a shared one: no page faults after). `offset` is a multiple of the host's page size. A shared
/// mapping keeps the file open, so that `read` copies its bytes through the file: on a host where a
/// first touch of each mapped page is dear (a virtual machine's shadow page tables), a pass over a
/// gigabyte costs a kernel copy instead of a quarter of a million faults. Movable, not copyable; unmapped
/// when destroyed. The file must not be truncated while it is mapped (a read past its new end is a bus
/// error): cardsim replaces its files by renaming new ones over them, which is safe.
class MappedFile {
public:
    MappedFile() = default;
    /// Maps the range of the file open as `fd` (which may be closed afterwards); `file` names it in
    /// the cardsim::Error thrown when the host refuses.
    MappedFile(int fd, std::uint64_t offset, std::uint64_t length, Sharing sharing, const std::string& file,
               Commit commit = Commit::UpFront);
    /// The whole file at `path`, private: cardsim::Error naming it when it cannot be opened.
    static MappedFile whole(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    /// The mapped bytes, in place.
    std::span<std::byte> bytes() const { return {base_, static_cast<std::size_t>(size_)}; }
    /// Whether `read` copies through the file (a shared mapping) rather than from the mapping.
    bool reads_through_file() const { return fd_ >= 0; }
    /// Copies the mapped bytes [at, at + out.size()) into `out`: through the file (pread, no page of
    /// the mapping touched) for a shared mapping, whose pages are the file's; from the mapping for a
    /// private one, which may hold writes the file does not. cardsim::Error naming the file when the
    /// range runs past the mapping or the file cannot be read.
    void read(std::uint64_t at, std::span<std::byte> out) const;

private:
    /// Unmaps, and closes the file a shared mapping kept.
    void release() noexcept;

    std::byte* base_ = nullptr;
    std::uint64_t size_ = 0, offset_ = 0;
    int fd_ = -1; ///< a shared mapping's file, for `read`
    std::string file_;
};

/// The host's page size: a mapping's offset is a multiple of it.
std::uint64_t page_bytes();

} // namespace cardsim::io
