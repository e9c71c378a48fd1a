#include "engine/program/image.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/mapped_file.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

namespace cardsim::program {
namespace {

constexpr char image_magic[8] = {'C', 'A', 'R', 'D', 'D', 'D', 'R', '\x1a'};
constexpr std::uint32_t image_version = 2;
constexpr std::uint64_t head_bytes = 24, entry_bytes = 24; // version 2's header and table entry
/// The data area's alignment: a multiple of every page size a host maps files by.
constexpr std::uint64_t data_alignment = std::uint64_t{1} << 16;

void put64(std::vector<std::byte>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out.push_back(std::byte((v >> (8 * i)) & 0xff));
}
void put32(std::vector<std::byte>& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(std::byte((v >> (8 * i)) & 0xff));
}
std::uint64_t get(std::span<const std::byte> b, std::uint64_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
        v |= std::uint64_t(std::to_integer<unsigned>(b[at + i])) << (8 * i);
    return v;
}

/// Calls `put(bytes)` with `n` zero bytes, a block at a time.
template <class Put>
void put_zeros(std::uint64_t n, Put& put) {
    static const std::array<std::byte, 1 << 16> zeros{};
    while (n > 0) {
        const auto k = std::min<std::uint64_t>(n, zeros.size());
        put(std::span<const std::byte>(zeros.data(), k));
        n -= k;
    }
}

/// Calls `put(bytes)` with the image's version 2 file bytes in order (file_layout's layout).
template <class Put>
void stream_file(const Image& image, Put put) {
    const auto layout = file_layout(image.extents());
    const auto head = encode_head(image, layout);
    put(std::span<const std::byte>(head));
    std::uint64_t at = head.size();
    for (std::size_t k = 0; k < image.chunks.size(); ++k) {
        put_zeros(layout.offsets[k] - at, put);
        image.chunks[k].bytes.for_pieces(put);
        at = layout.offsets[k] + image.chunks[k].bytes.size();
    }
}

/// A chunk as the file holds it: where it lies in DDR and where its bytes are in the file.
struct Entry {
    std::uint64_t address = 0, length = 0, offset = 0;
};

/// Whether b[from, to) is all zeros.
bool zeros(std::span<const std::byte> b, std::uint64_t from, std::uint64_t to) {
    return std::all_of(b.begin() + static_cast<std::ptrdiff_t>(from),
                       b.begin() + static_cast<std::ptrdiff_t>(to),
                       [](std::byte x) { return x == std::byte{0}; });
}

/// The chunk table of the image file `b` (version 1 or 2), every rule of the format checked.
std::vector<Entry> entries(std::span<const std::byte> b, const std::string& file) {
    auto fail = [&](const std::string& what) { throw Error(file + ": " + what); };
    if (b.size() < 16) fail(fmt::format("truncated header: expected 16 bytes, the file has {}", b.size()));
    if (std::memcmp(b.data(), image_magic, 8) != 0) fail("wrong magic: this is not a cardsim DDR image");
    const auto version = get(b, 8, 4);
    if (version != 1 && version != image_version)
        fail(fmt::format("format version {}, this build reads versions 1 and {}", version, image_version));
    const auto count = get(b, 12, 4);
    std::vector<Entry> out;
    std::uint64_t end_of_last = 0; // of the last chunk's addresses
    auto check_address = [&](std::uint64_t i, std::uint64_t address, std::uint64_t length) {
        if (address + length < address)
            fail(fmt::format("chunk {}: address {:#x} + {} overflows", i, address, length));
        if (i > 0 && address < end_of_last)
            fail(fmt::format("chunk {}: address {:#x} overlaps or precedes the previous chunk", i, address));
        end_of_last = address + length;
    };
    if (version == 1) {
        std::uint64_t at = 16;
        for (std::uint64_t i = 0; i < count; ++i) {
            if (b.size() - at < 16) fail(fmt::format("chunk {}: truncated header at offset {}", i, at));
            const auto address = get(b, at, 8), length = get(b, at + 8, 8);
            at += 16;
            if (length > b.size() - at)
                fail(fmt::format("chunk {}: {} bytes at offset {} run past the file's end", i, length, at));
            check_address(i, address, length);
            out.push_back({address, length, at});
            at += length;
        }
        if (at != b.size()) fail(fmt::format("{} bytes after the last chunk", b.size() - at));
        return out;
    }
    if (b.size() < head_bytes)
        fail(fmt::format("truncated header: expected {} bytes, the file has {}", head_bytes, b.size()));
    const auto data_offset = get(b, 16, 8);
    if (count > (b.size() - head_bytes) / entry_bytes)
        fail(fmt::format("truncated chunk table: {} chunks of {} bytes do not fit in the file's {} bytes",
                         count, entry_bytes, b.size()));
    const std::uint64_t table_end = head_bytes + count * entry_bytes;
    if (data_offset < table_end || data_offset > b.size())
        fail(fmt::format("data offset {} lies outside [{}, {}] (after the chunk table, inside the file)",
                         data_offset, table_end, b.size()));
    if (!zeros(b, table_end, data_offset))
        fail(fmt::format("nonzero bytes between the chunk table's end ({}) and the data offset ({})",
                         table_end, data_offset));
    std::uint64_t at = data_offset; // the end of the last chunk's bytes in the file
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t e = head_bytes + i * entry_bytes;
        const auto address = get(b, e, 8), length = get(b, e + 8, 8), offset = get(b, e + 16, 8);
        check_address(i, address, length);
        if (offset < at)
            fail(fmt::format("chunk {}: its bytes at offset {} overlap or precede {} (the {})", i, offset, at,
                             i == 0 ? "data offset" : "previous chunk's end"));
        if (offset > b.size() || length > b.size() - offset)
            fail(fmt::format("chunk {}: {} bytes at offset {} run past the file's end", i, length, offset));
        if (!zeros(b, at, offset))
            fail(fmt::format("chunk {}: nonzero bytes in the data area before it, in [{}, {})", i, at,
                             offset));
        out.push_back({address, length, offset});
        at = offset + length;
    }
    if (at != b.size()) fail(fmt::format("{} bytes after the last chunk", b.size() - at));
    return out;
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

std::vector<Extent> Image::extents() const {
    std::vector<Extent> out;
    for (auto& c : chunks)
        out.push_back({c.address, c.bytes.size()});
    return out;
}

bool mirror_fits(std::span<const Extent> extents) {
    std::uint64_t bytes = 0;
    for (auto& e : extents)
        bytes += e.length;
    const std::uint64_t end = extents.empty() ? 0 : extents.back().address + extents.back().length;
    return !extents.empty() && end - bytes <= bytes / 8 + (std::uint64_t{1} << 20);
}

FileLayout file_layout(std::span<const Extent> extents) {
    FileLayout l;
    const std::uint64_t table_end = head_bytes + extents.size() * entry_bytes;
    l.data_offset = (table_end + data_alignment - 1) / data_alignment * data_alignment;
    l.mirrored = mirror_fits(extents);
    std::uint64_t at = l.data_offset;
    for (auto& e : extents) {
        l.offsets.push_back(l.mirrored ? l.data_offset + e.address : at);
        at = l.offsets.back() + e.length;
    }
    l.file_bytes = at;
    return l;
}

std::vector<std::byte> encode_head(const Image& image, const FileLayout& layout) {
    std::vector<std::byte> out;
    for (char c : image_magic)
        out.push_back(std::byte(c));
    put32(out, image_version);
    put32(out, static_cast<std::uint32_t>(image.chunks.size()));
    put64(out, layout.data_offset);
    for (std::size_t k = 0; k < image.chunks.size(); ++k) {
        put64(out, image.chunks[k].address);
        put64(out, image.chunks[k].bytes.size());
        put64(out, layout.offsets[k]);
    }
    out.resize(layout.data_offset);
    return out;
}

std::vector<std::byte> encode(const Image& image) {
    std::vector<std::byte> out;
    stream_file(image, [&](std::span<const std::byte> b) { out.insert(out.end(), b.begin(), b.end()); });
    return out;
}

Image decode_image(std::span<const std::byte> b, const std::string& file) {
    Image image;
    for (auto& e : entries(b, file)) {
        auto first = b.begin() + static_cast<std::ptrdiff_t>(e.offset);
        image.chunks.push_back(
            Chunk{e.address, std::vector<std::byte>(first, first + static_cast<std::ptrdiff_t>(e.length))});
    }
    return image;
}

ImageDigest::ImageDigest(std::size_t chunks)
    : state_(XXH64_createState(), [](XXH64_state_t* s) { XXH64_freeState(s); }) {
    XXH64_reset(state_.get(), 0);
    std::vector<std::byte> head;
    for (char c : image_magic)
        head.push_back(std::byte(c));
    put32(head, 1);
    put32(head, static_cast<std::uint32_t>(chunks));
    XXH64_update(state_.get(), head.data(), head.size());
}

void ImageDigest::add(const Chunk& chunk) {
    std::vector<std::byte> head;
    put64(head, chunk.address);
    put64(head, chunk.bytes.size());
    XXH64_update(state_.get(), head.data(), head.size());
    chunk.bytes.for_pieces(
        [&](std::span<const std::byte> b) { XXH64_update(state_.get(), b.data(), b.size()); });
}

std::uint64_t ImageDigest::value() const {
    return XXH64_digest(state_.get());
}

std::uint64_t digest(const Image& image) {
    ImageDigest d(image.chunks.size());
    for (auto& c : image.chunks)
        d.add(c);
    return d.value();
}

void write_to(const Image& image, io::AtomicFile& f) {
    stream_file(image, [&](std::span<const std::byte> b) {
        f.write(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
    });
}

void write(const Image& image, const std::filesystem::path& path) {
    io::AtomicFile f(path);
    write_to(image, f);
    f.commit(false); // not synced: a program checks its image's digest before it runs on it
}

Image read_image(const std::filesystem::path& path) {
    auto memory = ImageMemory::of(io::MappedFile::whole(path));
    Image image;
    for (auto& e : entries(memory->bytes(), path.string()))
        image.chunks.push_back(Chunk{e.address, ChunkBytes(memory, e.offset, e.length)});
    return image;
}

} // namespace cardsim::program
