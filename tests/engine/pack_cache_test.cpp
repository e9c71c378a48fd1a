// The pack cache: a hit gives the bytes of packing, a damaged entry is detected and rebuilt, and
// the entry's name changes with the checkpoint, the weight format and the packing config, not with
// a timing knob.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/lower.hpp"
#include "engine/lower/pack_cache.hpp"
#include "engine/program/image_file.hpp"
#include "tests/support/graph_weights.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace cardsim;
using namespace cardsim::graph;

namespace {

/// A fresh directory under the temporary directory, removed at the end of the scope.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() /
               ("cardsim-pack-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
        std::filesystem::remove_all(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    static int& counter() {
        static int c = 0;
        return c;
    }
};

/// Lowers `g` with the pack cache `cache`; into `image` (as a compile does) when given.
lower::Compiled lower_with(const Graph& g, const WeightSource& w, const card::CardConfig& c,
                           const std::filesystem::path& cache, program::ImageFile* image = nullptr) {
    lower::Options o{Bucket{1, 1, 0}, 64};
    o.checkpoint_digest = 0xC0FFEE;
    o.pack_cache = cache;
    if (image) o.image_file = [image](std::size_t) { return image; };
    return lower::lower(g, w, lower::target_of(c), o);
}

/// Flips bits of the byte at `at` of `file`.
void flip_byte(const std::filesystem::path& file, std::uint64_t at) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(at));
    char c = 0;
    f.read(&c, 1);
    f.seekp(std::streamoff(at));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
}

/// The files of the cache `dir`, its entries' locks (`.locks/`) aside.
std::vector<std::filesystem::path> entries(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    if (std::filesystem::exists(dir))
        for (auto& e : std::filesystem::directory_iterator(dir))
            if (e.path().filename() != ".locks") out.push_back(e.path());
    return out;
}

/// A small decoder, its weights, a fresh cache folder and the default card, lowered once with the
/// cache (`cold`, which packs and writes the entry).
struct Packed {
    Graph g = example_decoder(DecoderShape{2, 256, 4, 2, 64, 512, 1000});
    test::GraphWeights w{g};
    TempDir dir;
    card::CardConfig config = card::default_card_config();
    lower::Compiled cold = lower_with(g, w, config, dir.path);
    /// Lowers it again with the cache, into `image` when given.
    lower::Compiled again(program::ImageFile* image = nullptr) const {
        return lower_with(g, w, config, dir.path, image);
    }
};

} // namespace

TEST_CASE("a pack cache hit gives the program and image bytes of packing") {
    const Packed p;
    REQUIRE_FALSE(p.cold.packed_from_cache);
    REQUIRE(entries(p.dir.path).size() == 1);
    auto warm = p.again();
    REQUIRE(warm.packed_from_cache);
    REQUIRE(program::encode(warm.image) == program::encode(p.cold.image));
    REQUIRE(program::encode(warm.program) == program::encode(p.cold.program));
    auto none = lower_with(p.g, p.w, p.config, {}); // no cache at all: the same bytes
    REQUIRE(program::encode(none.image) == program::encode(p.cold.image));
}

TEST_CASE("a pack cache hit in a run reads the entry in place, and a compile copies it into its image file") {
    const Packed p;
    const auto warm = p.again();
    REQUIRE(warm.packed_from_cache);
    REQUIRE(warm.image == p.cold.image);
    // Every chunk a range of the entry's mapping, each as far from its address as the first: the
    // card's DDR is lent the whole range.
    const auto* memory = warm.image.chunks.front().bytes.memory();
    REQUIRE(memory != nullptr);
    CHECK(memory != p.cold.image.chunks.front().bytes.memory());
    const auto shift = warm.image.chunks.front().bytes.offset() - warm.image.chunks.front().address;
    for (auto& c : warm.image.chunks) {
        CHECK(c.bytes.memory() == memory);
        CHECK(c.bytes.offset() - c.address == shift);
    }
    // A compile writes into its image file: the hit is copied into it, the same bytes.
    const auto file = p.dir.path / "p.ddr";
    {
        program::ImageFile image(file);
        const auto compiled = p.again(&image);
        REQUIRE(compiled.packed_from_cache);
        image.commit(compiled.image);
    }
    CHECK(program::read_image(file) == p.cold.image);
}

TEST_CASE("a pack cache entry written for other addresses is copied, not read in place") {
    TempDir dir;
    const auto entry = dir.path / "e.pack";
    const std::vector<std::string> keys{"a", "b"};
    const std::vector<std::byte> a(100, std::byte{1}), b(50, std::byte{2});
    const std::vector<program::ChunkBytes> owned{a, b};
    const std::vector<const program::ChunkBytes*> chunks{&owned[0], &owned[1]};
    const std::vector<std::uint64_t> sizes{100, 50}, at{0, 4096};
    lower::write_pack_entry(entry, keys, chunks, at);
    const auto mapped = lower::map_pack_entry(entry, keys, sizes, at);
    REQUIRE(mapped);
    CHECK(mapped->offsets == std::vector<std::uint64_t>{65536, 65536 + 4096});
    CHECK(mapped->memory->bytes()[65536 + 4096] == std::byte{2});
    CHECK_FALSE(lower::map_pack_entry(entry, keys, sizes, std::vector<std::uint64_t>{0, 8192}));
    CHECK_FALSE(lower::map_pack_entry(entry, keys, std::vector<std::uint64_t>{100, 51}, at));
    std::vector<std::byte> got_a(100), got_b(50);
    CHECK(lower::read_pack_entry(entry, keys, sizes,
                                 [&](std::size_t k, std::uint64_t at, std::span<const std::byte> bytes) {
                                     std::copy(bytes.begin(), bytes.end(),
                                               (k == 0 ? got_a.begin() : got_b.begin()) + std::ptrdiff_t(at));
                                 }));
    CHECK(got_a == a);
    CHECK(got_b == b);
    CHECK_FALSE(lower::map_pack_entry(dir.path / "none.pack", keys, sizes, at));
}

TEST_CASE("a key packed for several places (each layer's expert table) is read in place at each of them") {
    TempDir dir;
    const auto entry = dir.path / "e.pack";
    const std::vector<std::string> keys{"a", "table", "b", "table"};
    const std::vector<std::byte> a(100, std::byte{1}), t(16, std::byte{7}), b(50, std::byte{2});
    const std::vector<program::ChunkBytes> owned{a, t, b, t};
    std::vector<const program::ChunkBytes*> chunks;
    for (auto& c : owned)
        chunks.push_back(&c);
    const std::vector<std::uint64_t> sizes{100, 16, 50, 16}, at{0, 4096, 8192, 12288};
    lower::write_pack_entry(entry, keys, chunks, at);
    const auto mapped = lower::map_pack_entry(entry, keys, sizes, at);
    REQUIRE(mapped); // the second "table" is its own occurrence, at its own place
    CHECK(mapped->offsets == std::vector<std::uint64_t>{65536, 65536 + 4096, 65536 + 8192, 65536 + 12288});
    std::vector<std::vector<std::byte>> got{std::vector<std::byte>(100), std::vector<std::byte>(16),
                                            std::vector<std::byte>(50), std::vector<std::byte>(16)};
    CHECK(lower::read_pack_entry(
        entry, keys, sizes, [&](std::size_t k, std::uint64_t at, std::span<const std::byte> bytes) {
            std::copy(bytes.begin(), bytes.end(), got[k].begin() + std::ptrdiff_t(at));
        }));
    CHECK(got[1] == t);
    CHECK(got[3] == t);
    CHECK(got[2] == b);
}

TEST_CASE("a damaged pack cache entry is detected, packed again and rewritten") {
    const Packed p;
    const auto entry = entries(p.dir.path).at(0);
    const auto size = std::filesystem::file_size(entry);
    SECTION("one byte flipped in the middle") {
        flip_byte(entry, size / 2);
    }
    SECTION("cut short") {
        std::filesystem::resize_file(entry, size - 100);
    }
    auto again = p.again();
    REQUIRE_FALSE(again.packed_from_cache);
    REQUIRE(program::encode(again.image) == program::encode(p.cold.image));
    REQUIRE(std::filesystem::file_size(entry) == size); // rewritten whole
    REQUIRE(p.again().packed_from_cache);
}

TEST_CASE("a compile copying a pack cache entry whose checksum fails at its end packs over what it copied") {
    const Packed p;
    const auto entry = entries(p.dir.path).at(0);
    // The last byte before the checksum: every chunk is copied before the entry is found damaged.
    flip_byte(entry, std::filesystem::file_size(entry) - 9);
    const auto file = p.dir.path / "p.ddr";
    program::ImageFile image(file);
    const auto compiled = p.again(&image);
    CHECK_FALSE(compiled.packed_from_cache);
    CHECK(compiled.program.image_digest == p.cold.program.image_digest);
    image.commit(compiled.image);
    CHECK(program::read_image(file) == p.cold.image);
    CHECK(p.again().packed_from_cache); // the entry was rewritten
}

TEST_CASE("the pack cache entry changes with the checkpoint, the weight format and the packing config, not a "
          "timing knob") {
    auto g = example_decoder(DecoderShape{2, 256, 4, 2, 64, 512, 1000});
    test::GraphWeights w(g);
    TempDir dir;
    auto config = card::default_card_config();
    lower_with(g, w, config, dir.path);
    REQUIRE(entries(dir.path).size() == 1);
    auto timing = config;
    timing.clock.kernel_mhz = 250;
    REQUIRE(lower_with(g, w, timing, dir.path).packed_from_cache);
    auto int4 = config;
    int4.weights.code_bits = 4;
    auto four = lower_with(g, w, int4, dir.path);
    REQUIRE_FALSE(four.packed_from_cache);
    REQUIRE(entries(dir.path).size() == 2);
    const auto t8 = lower::target_of(config), t4 = lower::target_of(int4);
    REQUIRE(lower::pack_cache_entry(dir.path, 1, t8.pack_format, t8.pack_digest, 7) !=
            lower::pack_cache_entry(dir.path, 2, t8.pack_format, t8.pack_digest, 7));
    // Another set of chunks (another card's share of a plan) is another entry, never an overwrite.
    REQUIRE(lower::pack_cache_entry(dir.path, 1, t8.pack_format, t8.pack_digest, 7) !=
            lower::pack_cache_entry(dir.path, 1, t8.pack_format, t8.pack_digest, 8));
    const std::vector<std::string> ab{"a", "b"}, a_b{"ab", ""};
    const std::vector<std::uint64_t> sizes{1, 1};
    REQUIRE(lower::pack_keys_digest(ab, sizes) != lower::pack_keys_digest(a_b, sizes));
    REQUIRE(lower::pack_keys_digest(ab, sizes) !=
            lower::pack_keys_digest(ab, std::vector<std::uint64_t>{1, 2}));
    REQUIRE(t8.pack_digest != t4.pack_digest);
    REQUIRE(lower::target_of(timing).pack_digest == t8.pack_digest);
}

TEST_CASE("processes missing one pack cache entry at once pack it once and all get the same bytes") {
    auto g = example_decoder(DecoderShape{2, 256, 4, 2, 64, 512, 1000});
    test::GraphWeights w(g);
    TempDir dir;
    const auto config = card::default_card_config();
    const auto want = program::encode(lower_with(g, w, config, {}).image);
    std::vector<pid_t> children;
    for (int k = 0; k < 4; ++k) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            int packed = 0; // lowerings of this process that packed (missed the cache)
            try {
                for (int i = 0; i < 3; ++i) {
                    auto c = lower_with(g, w, config, dir.path);
                    if (program::encode(c.image) != want) ::_exit(100);
                    packed += c.packed_from_cache ? 0 : 1;
                }
            } catch (...) {
                ::_exit(101);
            }
            ::_exit(packed);
        }
        children.push_back(pid);
    }
    int packed = 0;
    for (auto pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        REQUIRE(WIFEXITED(status));
        REQUIRE(WEXITSTATUS(status) < 100);
        packed += WEXITSTATUS(status);
    }
    CHECK(packed == 1); // the others waited on the entry's lock, then read what it wrote
    std::size_t packs = 0;
    for (auto& e : entries(dir.path)) {
        CHECK(e.filename().string().find(".tmp-") == std::string::npos); // no temporary left behind
        packs += e.extension() == ".pack" ? 1 : 0;
    }
    REQUIRE(packs == 1);
    auto hit = lower_with(g, w, config, dir.path);
    REQUIRE(hit.packed_from_cache);
    REQUIRE(program::encode(hit.image) == want);
}

TEST_CASE("the pack cache keeps within its limit: the least recently used entries go first, a hit counts "
          "as a use, and the entry just written stays") {
    TempDir d;
    std::filesystem::create_directories(d.path);
    namespace fs = std::filesystem;
    const auto now = fs::file_time_type::clock::now();
    auto entry = [&](const std::string& name, std::size_t bytes, int minutes_ago) {
        const auto p = d.path / name;
        std::ofstream(p, std::ios::binary) << std::string(bytes, 'x');
        fs::last_write_time(p, now - std::chrono::minutes(minutes_ago));
        return p;
    };
    const auto oldest = entry("a.pack", 1000, 30), middle = entry("b.pack", 1000, 20),
               newest = entry("c.pack", 1000, 10), other = entry("notes.txt", 5000, 40);
    const auto tmp = entry(".d.pack.tmp-1-0", 5000, 50); // a live writer's temporary (pid 1): kept
    // A temporary of a writer that died (no process 99999999 runs: above any pid_max) is removed.
    const auto dead = entry(".e.pack.tmp-99999999-0", 700, 50);
    const auto fresh = entry(".f.pack.tmp-99999999-1", 300, 0); // written to a moment ago: kept
    lower::touch_pack_entry(oldest);                            // a hit: now the most recent
    const auto just = entry("d.pack", 1000, 60);                // written now, whatever its time says
    CHECK(lower::evict_pack_entries(d.path, 2500, just) == 2700);
    CHECK_FALSE(fs::exists(dead));
    CHECK(fs::exists(fresh));
    CHECK_FALSE(fs::exists(middle));
    CHECK_FALSE(fs::exists(newest));
    CHECK(fs::exists(oldest));
    CHECK(fs::exists(just));
    CHECK(fs::exists(other));
    CHECK(fs::exists(tmp));
    CHECK(lower::evict_pack_entries(d.path, 0, just) == 1000); // only the one just written is left
    CHECK(fs::exists(just));
    CHECK(lower::evict_pack_entries(d.path / "missing", 0, just) == 0);
}

TEST_CASE("CARDSIM_PACK_CACHE_MAX takes bytes or K, M, G, T and refuses anything else by name") {
    ::unsetenv("CARDSIM_PACK_CACHE_MAX");
    CHECK(lower::pack_cache_limit_from_environment() == lower::default_pack_cache_limit);
    ::setenv("CARDSIM_PACK_CACHE_MAX", "20G", 1);
    CHECK(lower::pack_cache_limit_from_environment() == (std::uint64_t(20) << 30));
    ::setenv("CARDSIM_PACK_CACHE_MAX", "4096", 1);
    CHECK(lower::pack_cache_limit_from_environment() == 4096);
    ::setenv("CARDSIM_PACK_CACHE_MAX", "512m", 1);
    CHECK(lower::pack_cache_limit_from_environment() == (std::uint64_t(512) << 20));
    for (const char* bad : {"lots", "-1", " -1", " 5", "12X", "1.5G", "G"}) {
        ::setenv("CARDSIM_PACK_CACHE_MAX", bad, 1);
        CHECK_THROWS_WITH(lower::pack_cache_limit_from_environment(),
                          Catch::Contains("CARDSIM_PACK_CACHE_MAX"));
    }
    ::unsetenv("CARDSIM_PACK_CACHE_MAX");
}

TEST_CASE("a pack cache that cannot be written costs the caching only: the lowering warns and goes on") {
    Packed p; // a cache that works, for the bytes to compare
    TempDir d;
    std::filesystem::create_directories(d.path);
    const auto file = d.path / "not-a-directory";
    std::ofstream(file) << "x"; // the cache's path is a file: nothing can be made under it
    const auto c = lower_with(p.g, p.w, p.config, file / "cache");
    CHECK_FALSE(c.packed_from_cache);
    CHECK(program::encode(c.image) == program::encode(p.cold.image));
}

TEST_CASE("a pack cache entry whose header claims a table larger than its keys' is a miss, read no further") {
    Packed p;
    std::filesystem::path entry;
    for (auto& e : entries(p.dir.path))
        if (e.extension() == ".pack") entry = e;
    REQUIRE_FALSE(entry.empty());
    const auto keep = entry.string() + ".good";
    std::filesystem::copy_file(entry, keep);
    // The data offset (bytes 16..23) pointed near the end of the file: a table of the whole entry.
    const auto n = std::filesystem::file_size(entry);
    {
        std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(16);
        const std::uint64_t huge = n - 8;
        for (int i = 0; i < 8; ++i)
            f.put(static_cast<char>((huge >> (8 * i)) & 0xff));
    }
    std::vector<std::string> keys{"k"};
    std::vector<std::uint64_t> sizes{1};
    CHECK_FALSE(lower::read_pack_entry(entry, keys, sizes, [](std::size_t, std::uint64_t, auto) {}));
    // A sparse entry of 1 TiB whose header's data offset is its end: refused by the offset alone,
    // not by allocating a table of a terabyte (std::bad_alloc, or the OOM killer).
    const auto sparse = p.dir.path / "sparse.pack";
    {
        std::string head = "CARDPACK";
        auto le = [&](std::uint64_t v, int bytes) {
            for (int i = 0; i < bytes; ++i)
                head.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
        };
        le(2, 4);                            // version
        le(1, 4);                            // one entry
        le((std::uint64_t(1) << 40) - 8, 8); // data offset
        std::ofstream(sparse, std::ios::binary) << head;
    }
    std::filesystem::resize_file(sparse, std::uint64_t(1) << 40);
    bool refused = false;
    CHECK_NOTHROW(refused =
                      !lower::read_pack_entry(sparse, keys, sizes, [](std::size_t, std::uint64_t, auto) {}));
    CHECK(refused);
    std::filesystem::remove(sparse);
    // The lowering takes it as damaged: packs again, and rewrites it whole.
    auto again = p.again();
    CHECK_FALSE(again.packed_from_cache);
    CHECK(program::encode(again.image) == program::encode(p.cold.image));
    CHECK(p.again().packed_from_cache);
}
