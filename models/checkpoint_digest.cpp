#include "models/checkpoint_digest.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <unistd.h>

namespace cardsim::models {
namespace {

/// Feeds `path`'s name, size and bytes to `state`.
void feed(XXH64_state_t* state, const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(fmt::format("{}: cannot read it: {}", path.string(), std::strerror(errno)));
    std::unique_ptr<int, void (*)(int*)> guard(&fd, [](int* f) { ::close(*f); });
    auto name = path.filename().string();
    XXH64_update(state, name.data(), name.size() + 1); // with its terminator: names never run together
    std::uint64_t size = std::filesystem::file_size(path);
    std::array<unsigned char, 8> le{};
    for (std::size_t i = 0; i < 8; ++i)
        le[i] = static_cast<unsigned char>(size >> (8 * i));
    XXH64_update(state, le.data(), le.size());
    std::vector<char> buf(1 << 20);
    std::uint64_t total = 0;
    for (;;) {
        auto n = ::read(fd, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error(fmt::format("{}: cannot read it: {}", path.string(), std::strerror(errno)));
        }
        if (n == 0) break;
        XXH64_update(state, buf.data(), std::size_t(n));
        total += std::uint64_t(n);
    }
    if (total != size) throw Error(fmt::format("{}: changed while it was read", path.string()));
}

} // namespace

std::uint64_t checkpoint_digest(const Checkpoint& checkpoint) {
    std::vector<std::filesystem::path> files;
    files.emplace_back(checkpoint.config_path());
    for (auto& f : checkpoint.files())
        files.emplace_back(f);
    std::sort(files.begin() + 1, files.end(),
              [](auto& a, auto& b) { return a.filename().string() < b.filename().string(); });
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                            XXH64_freeState);
    XXH64_reset(state.get(), 0);
    for (auto& f : files)
        feed(state.get(), f);
    return XXH64_digest(state.get());
}

} // namespace cardsim::models
