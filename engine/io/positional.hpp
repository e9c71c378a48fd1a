#pragma once
// Reads and writes at a file offset, whole: the loops over short transfers and interrupted calls
// that every positional read and write needs.

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::io {

/// Reads up to out.size() bytes at `offset` of `fd` (pread), retrying short reads and interrupted
/// calls until `out` is full or the file ends: the bytes read (fewer only at the file's end), or -1
/// with errno set on a failure.
std::int64_t read_at(int fd, std::uint64_t offset, std::span<std::byte> out);

/// Writes all of `bytes` at `offset` of `fd` (pwrite), retrying short writes and interrupted calls:
/// false with errno set on a failure (EIO when the host writes nothing).
bool write_at(int fd, std::uint64_t offset, std::span<const std::byte> bytes);

} // namespace cardsim::io
