#pragma once
// An output file that appears complete or not at all: written to a temporary beside it, renamed.

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::io {

/// A file being written. Bytes go to a temporary in the destination's directory; `commit` flushes
/// it to disk and renames it over the destination in one step, so a reader sees either the old
/// file or the whole new one. Destroyed without `commit`, it removes the temporary and leaves the
/// destination as it was. Failures throw cardsim::Error naming the path.
class AtomicFile {
public:
    explicit AtomicFile(std::filesystem::path destination);
    AtomicFile(AtomicFile&& other) noexcept;
    AtomicFile& operator=(AtomicFile&&) = delete;
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    /// Appends `bytes` (small ones buffered, a large one written straight to the temporary).
    void write(std::string_view bytes);
    /// Makes the destination the bytes written so far; no writes after it. With `sync` (the
    /// default) the bytes reach the disk before the rename; without, the rename alone makes the
    /// file appear whole to every reader (a crash of the machine itself may leave it short), for
    /// files a reader checks against a digest before use.
    void commit(bool sync = true);
    /// The destination path.
    const std::filesystem::path& destination() const { return destination_; }

private:
    /// Writes the buffer to the temporary.
    void flush();
    /// Removes the temporary and throws cardsim::Error saying `what` failed, with errno's reason.
    [[noreturn]] void fail(std::string_view what);

    std::filesystem::path destination_;
    std::filesystem::path temporary_;
    int fd_ = -1;
    std::string buffer_;
};

/// A temporary's name beside `destination`, unique within this process and among processes: where
/// an AtomicFile (or another writer that renames into place) writes first.
std::filesystem::path temporary_for(const std::filesystem::path& destination);

/// Writes `bytes` to `destination` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& destination, std::string_view bytes);

/// Writes `bytes` to `destination` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& destination, std::span<const std::byte> bytes);

/// The whole content of the file at `path`; cardsim::Error naming it when it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// The same, as bytes.
std::vector<std::byte> read_bytes(const std::filesystem::path& path);

} // namespace cardsim::io
