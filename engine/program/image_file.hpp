#pragma once
// An image file written in place: the weights are written straight into its data area as they are
// packed, never held whole in host memory.

#include "engine/io/atomic_file.hpp"
#include "engine/program/image.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>

namespace cardsim::program {

/// A DDR image file being written, whose chunks are written straight into the file as they are
/// packed: a temporary beside the destination, its blocks allocated up front (a full disk is an
/// error before packing starts), written by `write` from any thread in pieces from small buffers
/// (pwrite: the kernel copies into the page cache, and no page of a fresh mapping is ever touched,
/// which on a virtual machine costs more than the packing). `commit` writes the header and renames
/// the temporary over the destination: a reader sees the old file or the whole new one. Destroyed
/// without `commit`, it removes the temporary and leaves the destination as it was. Not copyable.
class ImageFile {
public:
    explicit ImageFile(std::filesystem::path destination);
    ~ImageFile();
    ImageFile(const ImageFile&) = delete;
    ImageFile& operator=(const ImageFile&) = delete;

    /// Opens the temporary for chunks at `extents` (in address order), laid out as a mirror of their
    /// addresses (program::file_layout): true when it did, and `write` and `memory` may be used.
    /// False when the layout is not a mirror, when the file system cannot allocate the file's blocks
    /// up front, or when asked a second time: the image is then written whole by `commit`.
    /// cardsim::Error naming the destination when the disk has no room.
    bool open(std::span<const Extent> extents);
    /// Writes `bytes` where DDR address `address` lies in the file (inside the extents opened); any
    /// thread, any order. cardsim::Error naming the destination when the write fails.
    void write(std::uint64_t address, std::span<const std::byte> bytes) const;
    /// The opened file's data area in place, in which byte `a` is the one DDR holds at address `a`:
    /// a shared mapping committed only where it is touched and read through the file
    /// (ImageMemory::reads_through_file), so the digest and the commit take the bytes `write` put
    /// there with kernel copies. The chunks of the image lowering returns are ranges of it. Null
    /// when not opened.
    std::shared_ptr<ImageMemory> memory();
    /// Makes the destination the file of `image`: chunks that are ranges of `memory` at their own
    /// addresses are taken as they lie in the file, any other is written in; then the header is
    /// written before them and the temporary renamed into place (`stage`, then `publish`).
    void commit(const Image& image);
    /// The first half of `commit`: the temporary holds the whole file of `image`, closed; every
    /// failure of writing happens here. Destroyed before `publish`, the destination stays as it was.
    void stage(const Image& image);
    /// The second half of `commit`: renames the staged temporary over the destination.
    void publish();
    /// The destination path.
    const std::filesystem::path& destination() const { return destination_; }

private:
    /// Closes and removes the temporary.
    void discard();

    std::filesystem::path destination_, temporary_;
    int fd_ = -1;
    std::vector<Extent> extents_;
    FileLayout layout_;
    std::shared_ptr<ImageMemory> memory_;
    bool asked_ = false;
    bool staged_ = false;                 ///< the temporary is whole and closed, waiting for `publish`
    std::optional<io::AtomicFile> whole_; ///< an image not packed in place, written whole and staged
};

} // namespace cardsim::program
