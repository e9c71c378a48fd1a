#pragma once
// Writing a file so that an existing one is never left half-written.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace cardsim::io {

/// Writes `bytes` to `path` through a temporary file in the same folder, flushed and then renamed
/// over `path`: readers see the old file or the new one, never a part. Throws cardsim::Error naming
/// the file when it cannot be written.
void write_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);

/// The same for text.
void write_atomically(const std::filesystem::path& path, std::string_view text);

/// The whole file at `path`; throws cardsim::Error naming it when it cannot be read.
std::vector<std::byte> read_file(const std::filesystem::path& path);

} // namespace cardsim::io
