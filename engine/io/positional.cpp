#include "engine/io/positional.hpp"

#include <cerrno>

#include <unistd.h>

namespace cardsim::io {

std::int64_t read_at(int fd, std::uint64_t offset, std::span<std::byte> out) {
    std::size_t done = 0;
    while (done < out.size()) {
        const auto n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break; // the file's end
        done += static_cast<std::size_t>(n);
    }
    return static_cast<std::int64_t>(done);
}

bool write_at(int fd, std::uint64_t offset, std::span<const std::byte> bytes) {
    for (std::size_t done = 0; done < bytes.size();) {
        const auto n =
            ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) {
            errno = EIO;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

} // namespace cardsim::io
