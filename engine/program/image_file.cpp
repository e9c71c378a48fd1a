#include "engine/program/image_file.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/mapped_file.hpp"
#include "engine/io/positional.hpp"

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
    if (staged_) { // staged, never published: the destination stays as it was
        ::unlink(temporary_.c_str());
        staged_ = false;
    }
    if (fd_ < 0) return;
    ::close(fd_);
    ::unlink(temporary_.c_str());
    fd_ = -1;
}

bool ImageFile::open(std::span<const Extent> extents) {
    if (asked_) return false;
    asked_ = true;
    auto layout = file_layout(extents);
    if (!layout.mirrored || extents.empty()) return false;
    fd_ = ::open(temporary_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0)
        throw Error(fmt::format("cannot write `{}`: creating its temporary `{}` failed: {}",
                                destination_.string(), temporary_.string(), std::strerror(errno)));
    // Blocks allocated now: a full disk is an error before any packing, and the file's blocks lie
    // together.
    if (::fallocate(fd_, 0, 0, static_cast<off_t>(layout.file_bytes)) != 0) {
        const int err = errno;
        discard();
        if (err == EOPNOTSUPP || err == EINVAL) return false; // written whole by `commit`
        throw Error(fmt::format("cannot write `{}`: allocating its {} bytes failed: {}",
                                destination_.string(), layout.file_bytes, std::strerror(err)));
    }
    extents_.assign(extents.begin(), extents.end());
    layout_ = std::move(layout);
    return true;
}

void ImageFile::write(std::uint64_t address, std::span<const std::byte> bytes) const {
    if (fd_ < 0)
        throw Error(fmt::format("cannot write `{}`: the file was not opened", destination_.string()));
    const std::uint64_t end = extents_.back().address + extents_.back().length;
    if (address > end || bytes.size() > end - address)
        throw Error(
            fmt::format("cannot write `{}`: {} bytes at address {:#x} run past the weights' end {:#x}",
                        destination_.string(), bytes.size(), address, end));
    if (!io::write_at(fd_, layout_.data_offset + address, bytes))
        throw Error(fmt::format("cannot write `{}`: writing {} bytes at address {:#x} failed: {}",
                                destination_.string(), bytes.size(), address, std::strerror(errno)));
}

std::shared_ptr<ImageMemory> ImageFile::memory() {
    if (fd_ < 0) return nullptr;
    if (!memory_) {
        const std::uint64_t end = extents_.back().address + extents_.back().length;
        memory_ = ImageMemory::of(io::MappedFile(fd_, layout_.data_offset, end, io::Sharing::Shared,
                                                 temporary_.string(), io::Commit::OnTouch));
    }
    return memory_;
}

void ImageFile::commit(const Image& image) {
    stage(image);
    publish();
}

void ImageFile::publish() {
    if (whole_) {
        whole_->publish();
        whole_.reset();
        return;
    }
    if (!staged_)
        throw Error(fmt::format("cannot write `{}`: the image is not staged", destination_.string()));
    staged_ = false;
    if (::rename(temporary_.c_str(), destination_.c_str()) != 0) {
        const int err = errno;
        ::unlink(temporary_.c_str());
        throw Error(fmt::format("cannot write `{}`: renaming its temporary into place failed: {}",
                                destination_.string(), std::strerror(err)));
    }
}

void ImageFile::stage(const Image& image) {
    const auto& memory = memory_;
    if (fd_ < 0 || image.extents() != extents_) {
        discard();
        whole_.emplace(destination_); // not packed in place: written whole
        write_to(image, *whole_);
        whole_->stage(false); // not synced: a program checks its image's digest before it runs on it
        return;
    }
    auto fail = [&](std::string_view what) {
        const int err = errno;
        discard();
        throw Error(
            fmt::format("cannot write `{}`: {} failed: {}", destination_.string(), what, std::strerror(err)));
    };
    for (auto& c : image.chunks)
        if (!memory || c.bytes.memory() != memory.get() || c.bytes.offset() != c.address)
            write(c.address, c.bytes);
    const auto head = encode_head(image, layout_);
    if (!io::write_at(fd_, 0, head)) fail("writing its header");
    // Not synced, as program::write: a program checks its image's digest before it runs on it.
    if (::close(fd_) != 0) {
        fd_ = -1;
        const int err = errno;
        ::unlink(temporary_.c_str());
        throw Error(
            fmt::format("cannot write `{}`: closing failed: {}", destination_.string(), std::strerror(err)));
    }
    fd_ = -1;
    staged_ = true;
}

} // namespace cardsim::program
