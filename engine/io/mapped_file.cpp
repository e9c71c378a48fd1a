#include "engine/io/mapped_file.hpp"

#include "engine/error.hpp"

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
                       const std::string& file)
    : size_(length) {
    if (offset % page_bytes() != 0)
        throw Error(fmt::format("{}: cannot map it from offset {}: not a multiple of the page size {}", file,
                                offset, page_bytes()));
    if (length == 0) return;
    const int flags = sharing == Sharing::Shared ? MAP_SHARED : MAP_PRIVATE;
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED)
        throw Error(fmt::format("{}: cannot map {} bytes of it: {}", file, length, std::strerror(errno)));
    base_ = static_cast<std::byte*>(p);
    // Only a hint: on a kernel without it, the pages fault in as they are touched.
    ::madvise(p, length, sharing == Sharing::Shared ? populate_write : populate_read);
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
    if (base_) ::munmap(base_, size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        if (base_) ::munmap(base_, size_);
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

} // namespace cardsim::io
