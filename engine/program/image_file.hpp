#pragma once
// An image file written in place: the weights are packed straight into its pages.

#include "engine/program/image.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace cardsim::program {

/// A DDR image file being written, whose chunks can be packed straight into the file's pages: a
/// shared mapping of a temporary beside the destination, its disk blocks allocated up front (so a
/// full disk is an error here, never a fault while packing). No copy of the image is made, and no
/// host memory besides the page cache's. `commit` writes the header and renames the temporary over
/// the destination: a reader sees the old file or the whole new one. Destroyed without `commit`, it
/// removes the temporary and leaves the destination as it was. Not copyable.
class ImageFile {
public:
    explicit ImageFile(std::filesystem::path destination);
    ~ImageFile();
    ImageFile(const ImageFile&) = delete;
    ImageFile& operator=(const ImageFile&) = delete;

    /// Memory for chunks at `extents` (in address order) in which byte `a` is the one DDR holds at
    /// address `a`: the file's data area, when the file lays the chunks out as a mirror of the
    /// weights region (program::file_layout). Null when it does not, when the file system cannot
    /// allocate the file's blocks up front, or when asked a second time: the image is then written
    /// whole by `commit`. cardsim::Error naming the destination when the disk has no room.
    std::shared_ptr<ImageMemory> memory(std::span<const Extent> extents);
    /// Makes the destination the file of `image`: its chunks' bytes are taken as they lie in the
    /// memory handed out (copied in where they are elsewhere), the header written before them.
    void commit(const Image& image);
    /// The destination path.
    const std::filesystem::path& destination() const { return destination_; }

private:
    /// Closes and removes the temporary.
    void discard();

    std::filesystem::path destination_, temporary_;
    int fd_ = -1;
    std::vector<Extent> extents_;
    FileLayout layout_;
    std::weak_ptr<ImageMemory> memory_;
    bool asked_ = false;
};

} // namespace cardsim::program
