#include "engine/io/mapped_file.hpp"

#include "engine/error.hpp"
#include "engine/io/positional.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cardsim::io {
namespace {

#ifndef MADV_POPULATE_READ
constexpr int populate_read = 22, populate_write = 23; // Linux 5.14; older headers lack the names
#else
constexpr int populate_read = MADV_POPULATE_READ, populate_write = MADV_POPULATE_WRITE;
#endif

/// A file descriptor closed when it goes out of scope.
struct Descriptor {
    int fd = -1;
    ~Descriptor() {
        if (fd >= 0) ::close(fd);
    }
};

} // namespace

std::uint64_t page_bytes() {
    static const auto bytes = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return bytes;
}

MappedFile::MappedFile(int fd, std::uint64_t offset, std::uint64_t length, Sharing sharing,
                       const std::string& file, Commit commit)
    : size_(length), offset_(offset), file_(file) {
    if (offset % page_bytes() != 0)
        throw Error(fmt::format("{}: cannot map it from offset {}: not a multiple of the page size {}", file,
                                offset, page_bytes()));
    if (length == 0) return;
    const int flags = sharing == Sharing::Shared ? MAP_SHARED : MAP_PRIVATE;
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED)
        throw Error(fmt::format("{}: cannot map {} bytes of it: {}", file, length, std::strerror(errno)));
    base_ = static_cast<std::byte*>(p);
    if (sharing == Sharing::Shared) {
        fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (fd_ < 0) {
            const int err = errno;
            release();
            throw Error(fmt::format("{}: cannot keep it open: {}", file, std::strerror(err)));
        }
    }
    // Only a hint: on a kernel without it, the pages fault in as they are touched.
    if (commit == Commit::UpFront)
        ::madvise(p, length, sharing == Sharing::Shared ? populate_write : populate_read);
}

void MappedFile::read(std::uint64_t at, std::span<std::byte> out) const {
    if (at > size_ || out.size() > size_ - at)
        throw Error(
            fmt::format("{}: reading {} bytes at {} of a mapping of {}", file_, out.size(), at, size_));
    if (fd_ < 0) {
        std::memcpy(out.data(), base_ + at, out.size());
        return;
    }
    const auto n = read_at(fd_, offset_ + at, out);
    if (n != static_cast<std::int64_t>(out.size()))
        throw Error(fmt::format("{}: cannot read it: {}", file_,
                                n < 0 ? std::strerror(errno) : "the file ends early (did it change?)"));
}

void MappedFile::release() noexcept {
    if (base_) ::munmap(base_, size_);
    if (fd_ >= 0) ::close(fd_);
    base_ = nullptr;
    fd_ = -1;
}

MappedFile MappedFile::whole(const std::filesystem::path& path) {
    Descriptor d{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (d.fd < 0) throw Error(fmt::format("cannot read `{}`: {}", path.string(), std::strerror(errno)));
    struct stat st {};
    if (::fstat(d.fd, &st) != 0)
        throw Error(fmt::format("cannot read `{}`: {}", path.string(), std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        throw Error(fmt::format("cannot read `{}`: expected a regular file", path.string()));
    return MappedFile(d.fd, 0, static_cast<std::uint64_t>(st.st_size), Sharing::Private, path.string());
}

MappedFile::~MappedFile() {
    release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)),
      offset_(other.offset_), fd_(std::exchange(other.fd_, -1)), file_(std::move(other.file_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        release();
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
        offset_ = other.offset_;
        fd_ = std::exchange(other.fd_, -1);
        file_ = std::move(other.file_);
    }
    return *this;
}

} // namespace cardsim::io
