#include "engine/lower/pack_cache.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/mapped_file.hpp"
#include "engine/program/image_memory.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cardsim::lower {
namespace {

constexpr char pack_magic[8] = {'C', 'A', 'R', 'D', 'P', 'A', 'C', 'K'};
constexpr std::uint32_t pack_version = 2;

std::uint64_t get(const std::byte* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
        v |= std::uint64_t(std::to_integer<unsigned>(p[i])) << (8 * i);
    return v;
}

void put(std::string& out, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// A read-only mapping of a whole file (empty when it cannot be made).
struct Mapping {
    const std::byte* data = nullptr;
    std::size_t size = 0;
    explicit Mapping(const std::filesystem::path& path) {
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && st.st_size > 0) {
            void* p = ::mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
            if (p != MAP_FAILED) {
                data = static_cast<const std::byte*>(p);
                size = std::size_t(st.st_size);
            }
        }
        ::close(fd);
    }
    ~Mapping() {
        if (data) ::munmap(const_cast<std::byte*>(data), size);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
};

} // namespace

std::filesystem::path pack_cache_from_environment() {
    const char* v = std::getenv("CARDSIM_PACK_CACHE");
    return v && *v ? std::filesystem::path(v) : std::filesystem::path();
}

std::uint64_t pack_cache_limit_from_environment() {
    const char* v = std::getenv("CARDSIM_PACK_CACHE_MAX");
    if (!v || !*v) return default_pack_cache_limit;
    const std::string text(v);
    std::size_t used = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::uint64_t unit = 1;
    if (used > 0 && used + 1 == text.size()) {
        const std::string units = "KMGT";
        const auto at = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(text.back()))));
        if (at != std::string::npos) {
            unit = std::uint64_t(1) << (10 * (at + 1));
            ++used;
        }
    }
    if (used == 0 || used != text.size() || text.front() == '-' || n > UINT64_MAX / unit)
        throw Error(
            fmt::format("CARDSIM_PACK_CACHE_MAX=`{}`: expected bytes, or a number with a K, M, G or T "
                        "suffix (e.g. 20G)",
                        text));
    return n * unit;
}

std::uint64_t evict_pack_entries(const std::filesystem::path& dir, std::uint64_t limit,
                                 const std::filesystem::path& keep) {
    namespace fs = std::filesystem;
    struct Entry {
        fs::path path;
        fs::file_time_type used;
        std::uint64_t bytes;
    };
    std::vector<Entry> entries;
    std::uint64_t total = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code e;
        if (it->path().extension() != ".pack" || !it->is_regular_file(e)) continue;
        const auto bytes = it->file_size(e);
        const auto used = it->last_write_time(e);
        if (e) continue;
        entries.push_back({it->path(), used, bytes});
        total += bytes;
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
    std::uint64_t removed = 0;
    for (const auto& e : entries) {
        if (total <= limit) break;
        if (fs::equivalent(e.path, keep, ec)) continue;
        std::error_code r;
        if (fs::remove(e.path, r)) {
            total -= e.bytes;
            removed += e.bytes;
        }
    }
    return removed;
}

void touch_pack_entry(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
}

std::filesystem::path pack_cache_entry(const std::filesystem::path& dir, std::uint64_t checkpoint_digest,
                                       const std::string& format, std::uint64_t packing_digest) {
    std::string f = format;
    for (auto& c : f)
        if (c == '/') c = '-';
    return dir / fmt::format("{:016x}-{}-{:016x}.pack", checkpoint_digest, f, packing_digest);
}

namespace {

/// Where each key's bytes lie in the entry `b` (offset, length), its checksum checked first (in
/// slices, each slice's pages given back after when `give_back`: the check never holds the whole
/// entry resident), or nothing when the entry is damaged or not of this version. `gaps_zero`: also
/// nothing when a byte of the data area outside the entries' bytes is not zero.
std::optional<std::map<std::string_view, std::pair<std::uint64_t, std::uint64_t>>>
layout_of(const std::byte* b, std::size_t n, bool give_back) {
    if (!b || n < 32 || std::memcmp(b, pack_magic, 8) != 0 || get(b + 8, 4) != pack_version)
        return std::nullopt;
    {
        std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                                XXH64_freeState);
        XXH64_reset(state.get(), 0);
        constexpr std::size_t slice = 64 << 20;
        for (std::size_t at = 0; at < n - 8; at += slice) {
            XXH64_update(state.get(), b + at, std::min(slice, n - 8 - at));
            if (give_back)
                ::madvise(const_cast<std::byte*>(b + at), std::min(slice, n - 8 - at), MADV_DONTNEED);
        }
        if (XXH64_digest(state.get()) != get(b + n - 8, 8)) return std::nullopt; // damaged or cut short
    }
    std::map<std::string_view, std::pair<std::uint64_t, std::uint64_t>> at; // key: offset, length
    const std::size_t end = n - 8;
    const std::uint64_t data_offset = get(b + 16, 8);
    if (data_offset > end) return std::nullopt;
    std::size_t p = 24;
    std::uint64_t last = data_offset; // the end of the previous entry's bytes
    for (std::uint64_t e = 0, count = get(b + 12, 4); e < count; ++e) {
        if (p > data_offset || data_offset - p < 4) return std::nullopt;
        const std::size_t key_len = get(b + p, 4);
        p += 4;
        if (data_offset - p < key_len || data_offset - p - key_len < 16) return std::nullopt;
        std::string_view key(reinterpret_cast<const char*>(b + p), key_len);
        p += key_len;
        const std::uint64_t len = get(b + p, 8), offset = get(b + p + 8, 8);
        p += 16;
        if (offset < last || offset > end || end - offset < len) return std::nullopt;
        at.emplace(key, std::pair{offset, len});
        last = offset + len;
    }
    if (last != end) return std::nullopt;
    return at;
}

/// Every key's (offset, length) in `layout`, in the order of `keys`, when each is there with its size.
std::optional<std::vector<std::pair<std::uint64_t, std::uint64_t>>>
find_keys(const std::map<std::string_view, std::pair<std::uint64_t, std::uint64_t>>& layout,
          std::span<const std::string> keys, std::span<const std::uint64_t> sizes) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> found;
    for (std::size_t k = 0; k < keys.size(); ++k) {
        auto it = layout.find(keys[k]);
        if (it == layout.end() || it->second.second != sizes[k]) return std::nullopt;
        found.push_back(it->second);
    }
    return found;
}

} // namespace

bool read_pack_entry(const std::filesystem::path& path, std::span<const std::string> keys,
                     std::span<const std::uint64_t> sizes,
                     const std::function<void(std::size_t k, std::span<const std::byte> bytes)>& put) {
    Mapping m(path);
    const std::byte* b = m.data;
    const auto layout = layout_of(b, m.size, true);
    if (!layout) return false;
    const auto found = find_keys(*layout, keys, sizes); // every key's, before any byte is copied
    if (!found) return false;
    for (std::size_t k = 0; k < keys.size(); ++k) {
        const auto [offset, length] = (*found)[k];
        put(k, std::span(b + offset, length));
        // Handed over: its mapped pages need not stay resident (advice only).
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        const auto from = reinterpret_cast<std::uintptr_t>(b + offset) / page * page;
        const auto end = reinterpret_cast<std::uintptr_t>(b + offset + length);
        ::madvise(reinterpret_cast<void*>(from), end - from, MADV_DONTNEED);
    }
    return true;
}

std::optional<MappedEntry> map_pack_entry(const std::filesystem::path& path,
                                          std::span<const std::string> keys,
                                          std::span<const std::uint64_t> sizes,
                                          std::span<const std::uint64_t> addresses) {
    if (keys.empty() || addresses.size() != keys.size()) return std::nullopt;
    std::shared_ptr<program::ImageMemory> memory;
    try {
        memory = program::ImageMemory::of(io::MappedFile::whole(path));
    } catch (const Error&) {
        return std::nullopt; // missing or unreadable: packed again
    }
    const auto b = memory->bytes();
    const auto layout = layout_of(b.data(), b.size(), false);
    if (!layout) return std::nullopt;
    const auto found = find_keys(*layout, keys, sizes);
    if (!found) return std::nullopt;
    MappedEntry e{memory, {}};
    const std::uint64_t shift = (*found)[0].first - addresses[0];
    for (std::size_t k = 0; k < keys.size(); ++k) {
        const auto [offset, length] = (*found)[k];
        if (offset - addresses[k] != shift) return std::nullopt; // placed otherwise: copied instead
        // The bytes between this chunk and the next are DDR's zeros once lent.
        const std::uint64_t next = k + 1 < keys.size() ? (*found)[k + 1].first : offset + length;
        if (next < offset + length ||
            !std::all_of(b.begin() + std::ptrdiff_t(offset + length), b.begin() + std::ptrdiff_t(next),
                         [](std::byte x) { return x == std::byte{0}; }))
            return std::nullopt;
        e.offsets.push_back(offset);
    }
    return e;
}

void write_pack_entry(const std::filesystem::path& path, std::span<const std::string> keys,
                      std::span<const program::ChunkBytes* const> chunks,
                      std::span<const std::uint64_t> addresses) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
        throw Error(
            fmt::format("pack cache: cannot create `{}`: {}", path.parent_path().string(), ec.message()));
    std::vector<program::Extent> extents;
    std::uint64_t table_end = 24;
    for (std::size_t k = 0; k < keys.size(); ++k) {
        extents.push_back({addresses[k], chunks[k]->size()});
        table_end += 4 + keys[k].size() + 16;
    }
    constexpr std::uint64_t alignment = std::uint64_t{1} << 16; // every page size a host maps by
    const std::uint64_t data_offset = (table_end + alignment - 1) / alignment * alignment;
    const bool mirrored = program::mirror_fits(extents);
    std::vector<std::uint64_t> offsets;
    for (std::size_t k = 0, at = data_offset; k < keys.size(); ++k) {
        offsets.push_back(mirrored ? data_offset + addresses[k] : at);
        at = offsets.back() + chunks[k]->size();
    }
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                            XXH64_freeState);
    XXH64_reset(state.get(), 0);
    io::AtomicFile f(path);
    auto write = [&](std::string_view s) {
        XXH64_update(state.get(), s.data(), s.size());
        f.write(s);
    };
    std::string head(pack_magic, 8);
    put(head, pack_version, 4);
    put(head, keys.size(), 4);
    put(head, data_offset, 8);
    for (std::size_t k = 0; k < keys.size(); ++k) {
        put(head, keys[k].size(), 4);
        head += keys[k];
        put(head, chunks[k]->size(), 8);
        put(head, offsets[k], 8);
    }
    head.resize(data_offset, '\0');
    write(head);
    std::uint64_t at = data_offset;
    const std::string zeros(alignment, '\0');
    for (std::size_t k = 0; k < keys.size(); ++k) {
        for (std::uint64_t gap = offsets[k] - at; gap > 0;) {
            const auto n = std::min<std::uint64_t>(gap, zeros.size());
            write(std::string_view(zeros.data(), n));
            gap -= n;
        }
        chunks[k]->for_pieces([&](std::span<const std::byte> b) {
            write(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
        });
        at = offsets[k] + chunks[k]->size();
    }
    head.clear();
    put(head, XXH64_digest(state.get()), 8);
    f.write(head);
    f.commit(false); // not synced: a reader checks the checksum
}

} // namespace cardsim::lower
