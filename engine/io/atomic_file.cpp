#include "engine/io/atomic_file.hpp"

#include "engine/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <unistd.h>

namespace cardsim::io {

void write_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    std::random_device rd;
    auto tmp = dir / (path.filename().string() + ".tmp" + std::to_string(rd()) + std::to_string(::getpid()));
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error(path.string() + ": cannot write: " + std::strerror(errno));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fflush(f) == 0 && ok;
    ok = ::fsync(::fileno(f)) == 0 && ok;
    ok = std::fclose(f) == 0 && ok;
    std::error_code ec;
    if (ok) std::filesystem::rename(tmp, path, ec);
    if (!ok || ec) {
        std::filesystem::remove(tmp, ec);
        throw Error(path.string() + ": cannot write: " + (ok ? ec.message() : std::strerror(errno)));
    }
}

void write_atomically(const std::filesystem::path& path, std::string_view text) {
    write_atomically(path, std::as_bytes(std::span(text.data(), text.size())));
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot open: " + std::strerror(errno));
    in.seekg(0, std::ios::end);
    auto size = in.tellg();
    if (size < 0) throw Error(path.string() + ": cannot read its size");
    std::vector<std::byte> bytes(static_cast<std::size_t>(size));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(bytes.data()), size);
    if (!in) throw Error(path.string() + ": cannot read");
    return bytes;
}

} // namespace cardsim::io
