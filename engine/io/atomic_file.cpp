#include "engine/io/atomic_file.hpp"

#include "engine/error.hpp"
#include "engine/io/device_check.hpp"

#include <fmt/core.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace cardsim::io {
namespace {

/// Flush to the kernel once this many bytes are buffered.
constexpr std::size_t flush_threshold = 1 << 20;

/// Where the names of `destination`'s temporaries start: `.NAME.tmp-`, NAME cut to its first 200
/// bytes (back to the start of a UTF-8 character, never inside one), so that a temporary's name
/// stays within the 255 bytes a file name may have whenever the destination's does.
std::string temporary_prefix(std::string_view destination) {
    std::size_t cut = std::min<std::size_t>(destination.size(), 200);
    while (cut > 0 && cut < destination.size() &&
           (static_cast<unsigned char>(destination[cut]) & 0xc0) == 0x80)
        --cut; // destination[cut] continues a character: cut before that character
    return fmt::format(".{}.tmp-", destination.substr(0, cut));
}

} // namespace

std::filesystem::path temporary_for(const std::filesystem::path& destination) {
    static std::atomic<unsigned> counter{0};
    auto name =
        fmt::format("{}{}-{}", temporary_prefix(destination.filename().string()), ::getpid(), counter++);
    return destination.parent_path() / name;
}

AtomicFile::AtomicFile(std::filesystem::path destination)
    : destination_(std::move(destination)), temporary_(temporary_for(destination_)) {
    std::error_code ec;
    if (destination_.filename().empty() || std::filesystem::is_directory(destination_, ec))
        throw Error(
            fmt::format("cannot write `{}`: expected a file name, not a directory", destination_.string()));
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0)
        throw Error(fmt::format("cannot write `{}`: creating its temporary `{}` failed: {}",
                                destination_.string(), temporary_.string(), std::strerror(errno)));
    buffer_.reserve(flush_threshold);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : destination_(std::move(other.destination_)), temporary_(std::move(other.temporary_)), fd_(other.fd_),
      staged_(other.staged_), buffer_(std::move(other.buffer_)) {
    other.fd_ = -1;
    other.staged_ = false;
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(temporary_.c_str());
    } else if (staged_) {
        ::unlink(temporary_.c_str()); // staged, never published: the destination stays as it was
    }
}

void AtomicFile::fail(std::string_view what) {
    int err = errno;
    ::close(fd_);
    ::unlink(temporary_.c_str());
    fd_ = -1;
    throw Error(
        fmt::format("cannot write `{}`: {} failed: {}", destination_.string(), what, std::strerror(err)));
}

void AtomicFile::flush() {
    std::size_t done = 0;
    while (done < buffer_.size()) {
        auto n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("writing");
        done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
}

void AtomicFile::write(std::string_view bytes) {
    if (fd_ < 0)
        throw Error(fmt::format("cannot write `{}`: the file is already committed", destination_.string()));
    if (buffer_.size() + bytes.size() < flush_threshold) {
        buffer_.append(bytes);
        return;
    }
    flush(); // a large write goes to the kernel as it is, never through the buffer
    for (std::size_t done = 0; done < bytes.size();) {
        auto n = ::write(fd_, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("writing");
        done += static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit(bool sync) {
    stage(sync);
    publish();
}

void AtomicFile::stage(bool sync) {
    if (fd_ < 0)
        throw Error(fmt::format("cannot write `{}`: the file is already committed", destination_.string()));
    flush();
    if (sync && ::fsync(fd_) != 0) fail("syncing");
    if (::close(fd_) != 0) {
        fd_ = -1;
        int err = errno;
        ::unlink(temporary_.c_str());
        throw Error(
            fmt::format("cannot write `{}`: closing failed: {}", destination_.string(), std::strerror(err)));
    }
    fd_ = -1;
    staged_ = true;
}

void AtomicFile::publish() {
    if (!staged_)
        throw Error(fmt::format("cannot write `{}`: the file is not staged", destination_.string()));
    staged_ = false;
    if (::rename(temporary_.c_str(), destination_.c_str()) != 0) {
        int err = errno;
        ::unlink(temporary_.c_str());
        throw Error(fmt::format("cannot write `{}`: renaming its temporary into place failed: {}",
                                destination_.string(), std::strerror(err)));
    }
}

int temporary_writer(std::string_view file, std::string_view destination) {
    const std::string prefix = temporary_prefix(destination);
    if (!file.starts_with(prefix)) return 0;
    const auto rest = file.substr(prefix.size()); // PID-N
    const auto dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos || dash + 1 == rest.size() || dash > 9) return 0;
    int pid = 0;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        if (i == dash) continue;
        if (rest[i] < '0' || rest[i] > '9') return 0;
        if (i < dash) pid = pid * 10 + (rest[i] - '0');
    }
    return pid;
}

bool abandoned(const std::filesystem::directory_entry& file, int pid) {
    std::error_code e;
    const auto written = file.last_write_time(e);
    return !e && pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH &&
           written < std::filesystem::file_time_type::clock::now() - std::chrono::minutes(1);
}

void remove_temporaries(const std::filesystem::path& destination, bool mine) {
    namespace fs = std::filesystem;
    std::error_code ec;
    auto folder = fs::absolute(destination, ec).parent_path();
    if (ec || folder.empty()) folder = ".";
    const auto name = destination.filename().string();
    for (auto it = fs::directory_iterator(folder, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        std::error_code e;
        const int pid = temporary_writer(it->path().filename().string(), name);
        if (pid <= 0 || !it->is_regular_file(e)) continue;
        if ((mine && pid == ::getpid()) || abandoned(*it, pid)) fs::remove(it->path(), e);
    }
}

void write_file_atomically(const std::filesystem::path& destination, std::string_view bytes) {
    AtomicFile f(destination);
    f.write(bytes);
    f.commit();
}

std::string read_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(fmt::format("cannot read `{}`: it is a directory, expected a file", path.string()));
    refuse_device(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(fmt::format("cannot read `{}`: {}", path.string(), std::strerror(errno)));
    std::ostringstream s;
    s << in.rdbuf();
    if (in.bad()) throw Error(fmt::format("cannot read `{}`: reading failed", path.string()));
    return std::move(s).str();
}

void write_file_atomically(const std::filesystem::path& destination, std::span<const std::byte> bytes) {
    write_file_atomically(destination,
                          std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
    auto text = read_file(path);
    auto* p = reinterpret_cast<const std::byte*>(text.data());
    return std::vector<std::byte>(p, p + text.size());
}

} // namespace cardsim::io
