#include "engine/program/image.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace cardsim::program {
namespace {

constexpr char image_magic[8] = {'C', 'A', 'R', 'D', 'D', 'D', 'R', '\x1a'};
constexpr std::uint32_t image_version = 1;

void put64(std::vector<std::byte>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out.push_back(std::byte((v >> (8 * i)) & 0xff));
}
void put32(std::vector<std::byte>& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(std::byte((v >> (8 * i)) & 0xff));
}
std::uint64_t get(std::span<const std::byte> b, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
        v |= std::uint64_t(std::to_integer<unsigned>(b[at + i])) << (8 * i);
    return v;
}

} // namespace

std::uint64_t Image::bytes() const {
    std::uint64_t n = 0;
    for (auto& c : chunks)
        n += c.bytes.size();
    return n;
}

std::span<const std::byte> Image::find(std::uint64_t address, std::uint64_t length) const {
    auto it = std::upper_bound(chunks.begin(), chunks.end(), address,
                               [](std::uint64_t a, const Chunk& c) { return a < c.address; });
    if (it == chunks.begin()) return {};
    const Chunk& c = *std::prev(it);
    const std::uint64_t at = address - c.address;
    if (at > c.bytes.size() || length > c.bytes.size() - at || length == 0) return {};
    return std::span<const std::byte>(c.bytes).subspan(at, length);
}

std::vector<std::byte> encode(const Image& image) {
    std::vector<std::byte> out;
    out.reserve(16 + image.bytes() + 16 * image.chunks.size());
    for (char c : image_magic)
        out.push_back(std::byte(c));
    put32(out, image_version);
    put32(out, static_cast<std::uint32_t>(image.chunks.size()));
    for (auto& c : image.chunks) {
        put64(out, c.address);
        put64(out, c.bytes.size());
        out.insert(out.end(), c.bytes.begin(), c.bytes.end());
    }
    return out;
}

Image decode_image(std::span<const std::byte> b, const std::string& file) {
    auto fail = [&](const std::string& what) { throw Error(file + ": " + what); };
    if (b.size() < 16) fail(fmt::format("truncated header: expected 16 bytes, the file has {}", b.size()));
    if (std::memcmp(b.data(), image_magic, 8) != 0) fail("wrong magic: this is not a cardsim DDR image");
    auto version = get(b, 8, 4);
    if (version != image_version)
        fail(fmt::format("format version {}, this build reads version {}", version, image_version));
    auto count = get(b, 12, 4);
    Image image;
    std::size_t at = 16;
    std::uint64_t end_of_last = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
        if (b.size() - at < 16) fail(fmt::format("chunk {}: truncated header at offset {}", i, at));
        auto address = get(b, at, 8), length = get(b, at + 8, 8);
        at += 16;
        if (length > b.size() - at)
            fail(fmt::format("chunk {}: {} bytes at offset {} run past the file's end", i, length, at));
        if (address + length < address)
            fail(fmt::format("chunk {}: address {:#x} + {} overflows", i, address, length));
        if (i > 0 && address < end_of_last)
            fail(fmt::format("chunk {}: address {:#x} overlaps or precedes the previous chunk", i, address));
        Chunk c{address, std::vector<std::byte>(b.begin() + at, b.begin() + at + length)};
        at += length;
        end_of_last = address + length;
        image.chunks.push_back(std::move(c));
    }
    if (at != b.size()) fail(fmt::format("{} bytes after the last chunk", b.size() - at));
    return image;
}

namespace {

/// Calls `put(bytes)` with the image's file bytes in order, a chunk's bytes as they are (no copy).
template <class Put>
void stream(const Image& image, Put put) {
    std::vector<std::byte> head;
    for (char c : image_magic)
        head.push_back(std::byte(c));
    put32(head, image_version);
    put32(head, static_cast<std::uint32_t>(image.chunks.size()));
    put(std::span<const std::byte>(head));
    for (auto& c : image.chunks) {
        head.clear();
        put64(head, c.address);
        put64(head, c.bytes.size());
        put(std::span<const std::byte>(head));
        put(std::span<const std::byte>(c.bytes));
    }
}

} // namespace

std::uint64_t digest(const Image& image) {
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                            XXH64_freeState);
    XXH64_reset(state.get(), 0);
    stream(image, [&](std::span<const std::byte> b) { XXH64_update(state.get(), b.data(), b.size()); });
    return XXH64_digest(state.get());
}

void write(const Image& image, const std::filesystem::path& path) {
    io::AtomicFile f(path);
    stream(image, [&](std::span<const std::byte> b) {
        f.write(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
    });
    f.commit(false); // not synced: a program checks its image's digest before it runs on it
}

Image read_image(const std::filesystem::path& path) {
    return decode_image(io::read_bytes(path), path.string());
}

} // namespace cardsim::program
