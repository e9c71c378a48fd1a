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
    /// The first half of `commit`: the bytes written so far reach the temporary (and the disk, with
    /// `sync`), which is closed; every failure of writing happens here. `publish` then renames it.
    /// A command writing several files that belong together stages them all before publishing any,
    /// so a failure leaves every destination as it was.
    void stage(bool sync = true);
    /// The second half of `commit`: renames the staged temporary over the destination.
    void publish();
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
    bool staged_ = false; ///< closed, its temporary waiting for `publish`
    std::string buffer_;
};

/// A temporary's name beside `destination`, unique within this process and among processes: where
/// an AtomicFile (or another writer that renames into place) writes first. `.NAME.tmp-PID-N`, NAME
/// the destination's file name cut to 200 bytes (so it fits wherever the destination's name does).
std::filesystem::path temporary_for(const std::filesystem::path& destination);

/// The process that wrote `file` (a file name) as a temporary of `destination` (a file name):
/// temporary_for's `.DESTINATION.tmp-PID-N`; 0 when `file` is no such temporary.
int temporary_writer(std::string_view file, std::string_view destination);

/// Whether the temporary `file`, written by process `pid`, is abandoned: another process's, that
/// process gone, and the file not written for a minute (a writer alive in another PID namespace
/// still writes to its file).
bool abandoned(const std::filesystem::directory_entry& file, int pid);

/// Removes the temporaries of `destination` beside it (temporary_for's names, regular files only)
/// that no live writer holds: this process's own (`mine`: a command that failed), and those of a
/// process that is gone and has not written them for a minute (killed mid-write). Never throws.
void remove_temporaries(const std::filesystem::path& destination, bool mine);

/// Writes `bytes` to `destination` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& destination, std::string_view bytes);

/// Writes `bytes` to `destination` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& destination, std::span<const std::byte> bytes);

/// The whole content of the file at `path`; cardsim::Error naming it when it cannot be read.
std::string read_file(const std::filesystem::path& path);

/// The same, as bytes.
std::vector<std::byte> read_bytes(const std::filesystem::path& path);

} // namespace cardsim::io
