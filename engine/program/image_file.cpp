#include "engine/program/image_file.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/mapped_file.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace cardsim::program {

ImageFile::ImageFile(std::filesystem::path destination)
    : destination_(std::move(destination)), temporary_(io::temporary_for(destination_)) {
    if (destination_.filename().empty())
        throw Error(
            fmt::format("cannot write `{}`: expected a file name, not a directory", destination_.string()));
}

ImageFile::~ImageFile() {
    discard();
}

void ImageFile::discard() {
    if (fd_ < 0) return;
    ::close(fd_);
    ::unlink(temporary_.c_str());
    fd_ = -1;
}

std::shared_ptr<ImageMemory> ImageFile::memory(std::span<const Extent> extents) {
    if (asked_) return nullptr;
    asked_ = true;
    auto layout = file_layout(extents);
    if (!layout.mirrored) return nullptr;
    fd_ = ::open(temporary_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0)
        throw Error(fmt::format("cannot write `{}`: creating its temporary `{}` failed: {}",
                                destination_.string(), temporary_.string(), std::strerror(errno)));
    // Blocks allocated now: a shared mapping of a file with holes would fault (a bus error) on a
    // full disk while packing.
    if (::fallocate(fd_, 0, 0, static_cast<off_t>(layout.file_bytes)) != 0) {
        const int err = errno;
        discard();
        if (err == EOPNOTSUPP || err == EINVAL) return nullptr; // written whole by `commit`
        throw Error(fmt::format("cannot write `{}`: allocating its {} bytes failed: {}",
                                destination_.string(), layout.file_bytes, std::strerror(err)));
    }
    const std::uint64_t end = extents.back().address + extents.back().length;
    auto memory = ImageMemory::of(
        io::MappedFile(fd_, layout.data_offset, end, io::Sharing::Shared, temporary_.string()));
    extents_.assign(extents.begin(), extents.end());
    layout_ = std::move(layout);
    memory_ = memory;
    return memory;
}

void ImageFile::commit(const Image& image) {
    const auto memory = memory_.lock();
    if (fd_ < 0 || !memory || image.extents() != extents_) {
        discard();
        write(image, destination_); // not packed in place: written whole
        return;
    }
    auto fail = [&](std::string_view what) {
        const int err = errno;
        discard();
        throw Error(
            fmt::format("cannot write `{}`: {} failed: {}", destination_.string(), what, std::strerror(err)));
    };
    auto area = memory->bytes();
    for (auto& c : image.chunks)
        if (c.bytes.memory() != memory.get() || c.bytes.offset() != c.address)
            std::memcpy(area.data() + c.address, c.bytes.data(), c.bytes.size());
    const auto head = encode_head(image, layout_);
    for (std::size_t done = 0; done < head.size();) {
        const auto n = ::pwrite(fd_, head.data() + done, head.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("writing its header");
        done += static_cast<std::size_t>(n);
    }
    // Not synced, as program::write: a program checks its image's digest before it runs on it.
    if (::close(fd_) != 0) {
        fd_ = -1;
        const int err = errno;
        ::unlink(temporary_.c_str());
        throw Error(
            fmt::format("cannot write `{}`: closing failed: {}", destination_.string(), std::strerror(err)));
    }
    fd_ = -1;
    if (::rename(temporary_.c_str(), destination_.c_str()) != 0) {
        const int err = errno;
        ::unlink(temporary_.c_str());
        throw Error(fmt::format("cannot write `{}`: renaming its temporary into place failed: {}",
                                destination_.string(), std::strerror(err)));
    }
}

} // namespace cardsim::program
