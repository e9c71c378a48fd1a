#include "cli/output_paths.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace cardsim::cli {
namespace fs = std::filesystem;
namespace {

/// The folder a path lies in (`.` for a bare file name).
fs::path parent_of(const fs::path& path) {
    auto parent = fs::absolute(path).parent_path();
    return parent.empty() ? fs::path(".") : parent;
}

/// Throws unless `folder` exists, is a folder and may be written (for the output `what`).
void check_writable_folder(std::string_view option, const fs::path& path, const fs::path& folder) {
    std::error_code ec;
    if (!fs::exists(folder, ec))
        throw Error(
            fmt::format("{} {}: the folder {} does not exist", option, path.string(), folder.string()));
    if (!fs::is_directory(folder, ec))
        throw Error(fmt::format("{} {}: {} is not a folder", option, path.string(), folder.string()));
    // Whether a file can be made there, tried rather than asked (root passes access(2) on a
    // read-only mount, and on /proc, where nothing can be made).
    const auto probe = folder / fmt::format(".cardsim-probe-{}", ::getpid());
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        throw Error(fmt::format("{} {}: the folder {} cannot be written: {}", option, path.string(),
                                folder.string(), std::strerror(errno)));
    ::close(fd);
    ::unlink(probe.c_str());
}

} // namespace

void Outputs::file(std::string_view option, const fs::path& path) {
    std::error_code ec;
    if (path.empty()) throw Error(fmt::format("{}: an empty path", option));
    if (fs::is_directory(path, ec))
        throw Error(fmt::format("{} {}: it is a folder, expected a file path", option, path.string()));
    check_writable_folder(option, path, parent_of(path));
    const bool existed = fs::exists(path, ec);
    if (existed && !fs::is_regular_file(path, ec)) // a device or a pipe is never renamed over
        throw Error(
            fmt::format("{} {}: it is not a regular file, expected a file path", option, path.string()));
    if (existed) { // opened for writing, not truncated: it keeps its bytes until the command replaces it
        const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd < 0)
            throw Error(fmt::format("{} {}: the file exists and cannot be written: {}", option, path.string(),
                                    std::strerror(errno)));
        ::close(fd);
    }
    io::remove_temporaries(path, false); // a killed earlier run's: nobody will finish them
    claims_.push_back({path, existed, false});
}

void Outputs::folder(std::string_view option, const fs::path& path) {
    std::error_code ec;
    if (path.empty()) throw Error(fmt::format("{}: an empty path", option));
    const bool existed = fs::exists(path, ec);
    if (existed && !fs::is_directory(path, ec))
        throw Error(fmt::format("{} {}: it is a file, expected a folder", option, path.string()));
    if (existed) {
        check_writable_folder(option, path, path);
    } else {
        check_writable_folder(option, path, parent_of(path));
    }
    claims_.push_back({path, existed, true});
}

Outputs::~Outputs() {
    if (kept_) return;
    for (auto& c : claims_) {
        std::error_code ec;
        if (!c.existed) fs::remove_all(c.path, ec);
        if (c.is_folder) continue;
        io::remove_temporaries(c.path, true); // an AtomicFile's or a trace writer's, when not unwound
    }
}

} // namespace cardsim::cli
