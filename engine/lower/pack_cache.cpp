#include "engine/lower/pack_cache.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/mapped_file.hpp"
#include "engine/io/positional.hpp"
#include "engine/program/image_memory.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string_view>

#include <fcntl.h>
#include <sys/file.h>
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

/// Every page size a host maps by: the data area starts at a multiple of it.
constexpr std::uint64_t data_alignment = std::uint64_t{1} << 16;

/// The data offset of an entry holding `keys`: its table's end, rounded up to data_alignment.
std::uint64_t data_offset_for(std::span<const std::string> keys) {
    std::uint64_t table_end = 24;
    for (auto& k : keys)
        table_end += 4 + k.size() + 16;
    return (table_end + data_alignment - 1) / data_alignment * data_alignment;
}

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
    if (used == 0 || used != text.size() || !std::isdigit(static_cast<unsigned char>(text.front())) ||
        n > UINT64_MAX / unit)
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
    std::uint64_t removed = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code e;
        const std::string name = it->path().filename().string();
        // A temporary whose writer died (a sweep point killed at its timeout): never renamed, never
        // counted. `.NAME.pack.tmp-PID-N` is NAME.pack's (io::temporary_for).
        if (const auto at = name.rfind(".tmp-"); name.starts_with(".") && at != std::string::npos) {
            const std::string destination = name.substr(1, at - 1);
            const int writer = io::temporary_writer(name, destination);
            if (writer > 0 && destination.ends_with(".pack")) {
                const auto bytes = it->file_size(e);
                if (!e && io::abandoned(*it, writer) && fs::remove(it->path(), e)) removed += bytes;
                continue;
            }
        }
        if (it->path().extension() != ".pack" || !it->is_regular_file(e)) continue;
        const auto bytes = it->file_size(e);
        const auto used = it->last_write_time(e);
        if (e) continue;
        entries.push_back({it->path(), used, bytes});
        total += bytes;
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
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

std::uint64_t pack_keys_digest(std::span<const std::string> keys, std::span<const std::uint64_t> sizes) {
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                            XXH64_freeState);
    XXH64_reset(state.get(), 0);
    for (std::size_t k = 0; k < keys.size(); ++k) {
        std::string record;
        put(record, keys[k].size(), 8); // lengths first: no two lists of keys hash as one
        record += keys[k];
        put(record, k < sizes.size() ? sizes[k] : 0, 8);
        XXH64_update(state.get(), record.data(), record.size());
    }
    return XXH64_digest(state.get());
}

std::filesystem::path pack_cache_entry(const std::filesystem::path& dir, std::uint64_t checkpoint_digest,
                                       const std::string& format, std::uint64_t packing_digest,
                                       std::uint64_t keys_digest) {
    std::string f = format;
    for (auto& c : f)
        if (c == '/') c = '-';
    return dir /
           fmt::format("{:016x}-{}-{:016x}-{:016x}.pack", checkpoint_digest, f, packing_digest, keys_digest);
}

PackLock::PackLock(const std::filesystem::path& entry) {
    std::error_code ec;
    const auto locks = entry.parent_path() / ".locks";
    std::filesystem::create_directories(locks, ec);
    if (ec) return;
    const auto path = locks / (entry.filename().string() + ".lock");
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0)
        if (errno != EINTR) {
            ::close(fd_);
            fd_ = -1;
            return;
        }
}

PackLock::~PackLock() {
    if (fd_ >= 0) ::close(fd_); // closing the file releases the lock
}

namespace {

/// Where each key's bytes lie in an entry: (offset, length) of each of its occurrences, in file order.
using Layout = std::map<std::string_view, std::vector<std::pair<std::uint64_t, std::uint64_t>>>;

/// Where each key's bytes lie (offset, length) by the table of an entry of `n` bytes whose first
/// bytes are `head` (at least up to its data offset), or nothing when the entry is not of this
/// version or its table does not describe a whole entry. The checksum is not checked here.
std::optional<Layout> table_of(std::span<const std::byte> head, std::uint64_t n) {
    const std::byte* b = head.data();
    if (head.size() < 24 || n < 32 || std::memcmp(b, pack_magic, 8) != 0 || get(b + 8, 4) != pack_version)
        return std::nullopt;
    Layout at;
    const std::uint64_t end = n - 8;
    const std::uint64_t data_offset = get(b + 16, 8);
    if (data_offset > end || data_offset > head.size()) return std::nullopt;
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
        at[key].push_back({offset, len});
        last = offset + len;
    }
    if (last != end) return std::nullopt;
    return at;
}

/// Where each key's bytes lie in the mapped entry `b` of `n` bytes, its checksum checked first, or
/// nothing when it is damaged or not of this version.
std::optional<Layout> layout_of(const std::byte* b, std::size_t n) {
    if (!b || n < 32) return std::nullopt;
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                            XXH64_freeState);
    XXH64_reset(state.get(), 0);
    XXH64_update(state.get(), b, n - 8);
    if (XXH64_digest(state.get()) != get(b + n - 8, 8)) return std::nullopt; // damaged or cut short
    return table_of(std::span(b, n), n);
}

/// Every key's (offset, length) in `layout`, in the order of `keys`, when each is there with its size:
/// a key that `keys` holds more than once (the same bytes packed for several places, such as each
/// layer's expert table) takes its occurrences in the entry in turn.
std::optional<std::vector<std::pair<std::uint64_t, std::uint64_t>>>
find_keys(const Layout& layout, std::span<const std::string> keys, std::span<const std::uint64_t> sizes) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> found;
    std::map<std::string_view, std::size_t> used;
    for (std::size_t k = 0; k < keys.size(); ++k) {
        auto it = layout.find(keys[k]);
        if (it == layout.end()) return std::nullopt;
        const std::size_t i = used[keys[k]]++;
        if (i >= it->second.size() || it->second[i].second != sizes[k]) return std::nullopt;
        found.push_back(it->second[i]);
    }
    return found;
}

} // namespace

bool read_pack_entry(
    const std::filesystem::path& path, std::span<const std::string> keys,
    std::span<const std::uint64_t> sizes,
    const std::function<void(std::size_t k, std::uint64_t at, std::span<const std::byte> bytes)>& put) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::unique_ptr<const int, void (*)(const int*)> guard(&fd, [](const int* f) { ::close(*f); });
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 32) return false;
    const auto n = static_cast<std::uint64_t>(st.st_size);
    // Reads [at, at + out.size()) whole, or says it could not.
    auto read_at = [&](std::uint64_t at, std::span<std::byte> out) {
        return io::read_at(fd, at, out) == static_cast<std::int64_t>(out.size());
    };
    std::vector<std::byte> head(24);
    if (!read_at(0, head)) return false;
    const std::uint64_t data_offset = get(head.data() + 16, 8);
    // Bounded by these keys' table before anything is allocated by it: a damaged offset is a miss.
    if (data_offset < 24 || data_offset > n - 8 || data_offset > data_offset_for(keys)) return false;
    head.resize(data_offset);
    if (!read_at(0, head)) return false;
    const auto layout = table_of(head, n);
    if (!layout) return false;
    const auto found = find_keys(*layout, keys, sizes);
    if (!found) return false;
    // Each key's range, by offset: a piece of the file is handed to the keys it overlaps.
    std::vector<std::size_t> by_offset(keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k)
        by_offset[k] = k;
    std::sort(by_offset.begin(), by_offset.end(),
              [&](std::size_t a, std::size_t b) { return (*found)[a].first < (*found)[b].first; });
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                            XXH64_freeState);
    XXH64_reset(state.get(), 0);
    XXH64_update(state.get(), head.data(), head.size());
    std::vector<std::byte> piece(std::size_t{1} << 20);
    std::size_t next = 0; // the first key (by offset) not yet wholly handed over
    for (std::uint64_t at = data_offset; at < n - 8;) {
        const auto bytes = std::span(piece.data(), std::min<std::uint64_t>(piece.size(), n - 8 - at));
        if (!read_at(at, bytes)) return false;
        XXH64_update(state.get(), bytes.data(), bytes.size());
        const std::uint64_t end = at + bytes.size();
        for (std::size_t i = next; i < by_offset.size(); ++i) {
            const auto [offset, length] = (*found)[by_offset[i]];
            if (offset >= end) break;
            const std::uint64_t from = std::max(offset, at), to = std::min(offset + length, end);
            if (from < to) put(by_offset[i], from - offset, bytes.subspan(from - at, to - from));
            if (offset + length <= end && i == next) ++next;
        }
        at = end;
    }
    std::array<std::byte, 8> sum{};
    return read_at(n - 8, sum) && XXH64_digest(state.get()) == get(sum.data(), 8);
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
    const auto layout = layout_of(b.data(), b.size());
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
    for (std::size_t k = 0; k < keys.size(); ++k)
        extents.push_back({addresses[k], chunks[k]->size()});
    const std::uint64_t data_offset = data_offset_for(keys);
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
    const std::string zeros(data_alignment, '\0');
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
