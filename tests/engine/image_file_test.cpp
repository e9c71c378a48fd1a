// The DDR image's file, version 2: a mirror of the weights region that can be packed in place and
// read by mapping it; version 1 still read; the digest of the content, whichever version.

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/program/image.hpp"
#include "engine/program/image_file.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace cardsim;

namespace {

/// `n` bytes counting up from `seed`.
std::vector<std::byte> counting(std::size_t n, unsigned seed) {
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = std::byte((seed + i * 7) & 0xff);
    return v;
}

/// Two chunks with a gap between them, as lowering lays weights out.
program::Image two_chunks() {
    program::Image image;
    image.chunks.push_back({0, counting(1000, 1)});
    image.chunks.push_back({4096, counting(300, 2)});
    return image;
}

void put(std::vector<std::byte>& out, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
        out.push_back(std::byte((v >> (8 * i)) & 0xff));
}

/// The version 1 encoding of `image`, written here by hand from the format's description.
std::vector<std::byte> version_1(const program::Image& image) {
    std::vector<std::byte> out;
    for (char c : std::string_view("CARDDDR\x1a", 8))
        out.push_back(std::byte(c));
    put(out, 1, 4);
    put(out, image.chunks.size(), 4);
    for (auto& c : image.chunks) {
        put(out, c.address, 8);
        put(out, c.bytes.size(), 8);
        out.insert(out.end(), c.bytes.begin(), c.bytes.end());
    }
    return out;
}

std::uint64_t get(const std::vector<std::byte>& b, std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= std::uint64_t(std::to_integer<unsigned>(b[at + i])) << (8 * i);
    return v;
}

void set(std::vector<std::byte>& b, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        b[at + i] = std::byte((v >> (8 * i)) & 0xff);
}

std::string message(const std::vector<std::byte>& file) {
    try {
        program::decode_image(file, "x.ddr");
    } catch (const Error& e) {
        return e.what();
    }
    return "(accepted)";
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// The names in `dir`.
std::vector<std::string> names(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (auto& e : std::filesystem::directory_iterator(dir))
        out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

TEST_CASE("a version 2 image file mirrors the weights region after a 64 KiB aligned head") {
    const auto image = two_chunks();
    const auto layout = program::file_layout(image.extents());
    CHECK(layout.mirrored);
    CHECK(layout.data_offset == 65536);
    CHECK(layout.offsets == std::vector<std::uint64_t>{65536, 65536 + 4096});
    const auto file = program::encode(image);
    REQUIRE(file.size() == 65536 + 4096 + 300);
    CHECK(layout.file_bytes == file.size());
    CHECK(get(file, 16) == 65536);
    for (std::size_t k = 0; k < 2; ++k) {
        const auto& c = image.chunks[k];
        CHECK(std::memcmp(file.data() + 65536 + c.address, c.bytes.data(), c.bytes.size()) == 0);
    }
    // The gap between the chunks is zeros, as DDR holds there.
    CHECK(std::all_of(file.begin() + 65536 + 1000, file.begin() + 65536 + 4096,
                      [](std::byte b) { return b == std::byte{0}; }));
    CHECK(program::decode_image(file) == image);
}

TEST_CASE("an image's digest is of its content: a version 1 and a version 2 file of it agree") {
    const auto image = two_chunks();
    const auto v1 = version_1(image);
    CHECK(program::digest(image) == XXH64(v1.data(), v1.size(), 0));
    CHECK(program::decode_image(v1) == image); // version 1 is still read
    CHECK(program::digest(program::decode_image(program::encode(image))) == program::digest(image));
}

TEST_CASE("an image with far-apart chunks is laid out chunk after chunk, not as a mirror") {
    program::Image image;
    image.chunks.push_back({0, counting(100, 1)});
    image.chunks.push_back({std::uint64_t{1} << 40, counting(100, 2)});
    const auto layout = program::file_layout(image.extents());
    CHECK_FALSE(layout.mirrored);
    CHECK(layout.offsets == std::vector<std::uint64_t>{65536, 65636});
    const auto file = program::encode(image);
    CHECK(file.size() == 65736);
    CHECK(program::decode_image(file) == image);
}

TEST_CASE("a malformed version 2 image file is refused naming the chunk and what was expected") {
    const auto good = program::encode(two_chunks());
    const std::size_t entry1 = 24 + 24; // chunk 1's table entry
    auto overlapping = good;
    set(overlapping, entry1 + 16, 65536 + 500); // chunk 1's bytes inside chunk 0's
    CHECK(
        contains(message(overlapping), "x.ddr: chunk 1: its bytes at offset 66036 overlap or precede 66536"));
    auto early = good;
    set(early, 24 + 16, 100); // chunk 0's bytes inside the table
    CHECK(contains(message(early),
                   "chunk 0: its bytes at offset 100 overlap or precede 65536 (the data offset)"));
    auto past = good;
    set(past, entry1 + 8, 301); // one byte more than the file holds
    CHECK(contains(message(past), "chunk 1: 301 bytes at offset 69632 run past the file's end"));
    auto gap = good;
    gap[65536 + 2000] = std::byte{1};
    CHECK(contains(message(gap), "chunk 1: nonzero bytes in the data area before it"));
    auto padding = good;
    padding[1000] = std::byte{1};
    CHECK(contains(message(padding),
                   "nonzero bytes between the chunk table's end (72) and the data offset (65536)"));
    auto data_offset = good;
    set(data_offset, 16, 40);
    CHECK(contains(message(data_offset), "data offset 40 lies outside [72, "));
    auto table = std::vector<std::byte>(good.begin(), good.begin() + 60);
    CHECK(contains(message(table), "truncated chunk table: 2 chunks of 24 bytes"));
    auto trailing = good;
    trailing.push_back(std::byte{0});
    CHECK(contains(message(trailing), "1 bytes after the last chunk"));
    auto version = good;
    version[8] = std::byte{3};
    CHECK(contains(message(version), "format version 3, this build reads versions 1 and 2"));
    auto order = good;
    set(order, entry1, 10); // chunk 1's address inside chunk 0's
    CHECK(contains(message(order), "chunk 1: address 0xa overlaps or precedes the previous chunk"));
}

TEST_CASE("an image read from its file is ranges of the file's pages at one distance from their addresses") {
    const test::ScratchDir dir("image-read");
    const auto image = two_chunks();
    program::write(image, dir / "i.ddr");
    const auto back = program::read_image(dir / "i.ddr");
    REQUIRE(back == image);
    REQUIRE(back.chunks[0].bytes.memory() != nullptr);
    CHECK(back.chunks[1].bytes.memory() == back.chunks[0].bytes.memory());
    for (auto& c : back.chunks)
        CHECK(c.bytes.offset() == 65536 + c.address);
    // A chunk read in place can be written without reaching the file (a private mapping).
    auto writable = program::read_image(dir / "i.ddr");
    writable.chunks[0].bytes[0] = std::byte{0xee};
    CHECK(program::read_image(dir / "i.ddr") == image);
    // A version 1 file is read too.
    io::write_file_atomically(dir / "v1.ddr", version_1(image));
    CHECK(program::read_image(dir / "v1.ddr") == image);
    CHECK_THROWS_WITH(program::read_image(dir / "none.ddr"),
                      Catch::Contains("cannot read `") && Catch::Contains("none.ddr"));
}

TEST_CASE("an image written in place into its file reads back the same, and is whole or absent") {
    const test::ScratchDir dir("image-file");
    const auto dest = dir / "p.ddr";
    const auto want = two_chunks();
    {
        program::ImageFile f(dest);
        CHECK(f.memory() == nullptr); // not opened yet
        REQUIRE(f.open(want.extents()));
        CHECK_FALSE(f.open(want.extents())); // opened once
        auto memory = f.memory();
        REQUIRE(memory);
        CHECK(memory->reads_through_file());
        program::Image packed;
        for (auto& c : want.chunks) {
            // In two pieces, the second first: any order.
            const auto half = c.bytes.size() / 2;
            f.write(c.address + half, std::span(c.bytes.data() + half, c.bytes.size() - half));
            f.write(c.address, std::span(c.bytes.data(), half));
            packed.chunks.push_back({c.address, program::ChunkBytes(memory, c.address, c.bytes.size())});
        }
        // The chunks read back through the file, and their digest is the content's.
        CHECK(packed == want);
        CHECK(program::digest(packed) == program::digest(want));
        CHECK_THROWS_WITH(f.write(4096 + 300, counting(1, 0)),
                          Catch::Contains("p.ddr") && Catch::Contains("run past the weights' end"));
        CHECK_FALSE(std::filesystem::exists(dest)); // nothing at the destination before the commit
        f.commit(packed);
        // The chunks stay readable after the commit (the file renamed under them).
        CHECK(packed == want);
    }
    CHECK(names(dir.path()) == std::vector<std::string>{"p.ddr"});
    CHECK(program::read_image(dest) == want);
    CHECK(io::read_bytes(dest) == program::encode(want)); // the same bytes program::write gives

    // Abandoned without a commit: the destination keeps its old bytes and no temporary is left.
    {
        program::ImageFile f(dest);
        REQUIRE(f.open(want.extents()));
        f.write(0, std::vector<std::byte>(1000, std::byte{0xff}));
    }
    CHECK(names(dir.path()) == std::vector<std::string>{"p.ddr"});
    CHECK(program::read_image(dest) == want);

    // Chunks given elsewhere (not opened, or chunks that are not its ranges) are written whole.
    program::Image other;
    other.chunks.push_back({0, counting(10, 9)});
    other.chunks.push_back({std::uint64_t{1} << 40, counting(10, 8)});
    {
        program::ImageFile f(dest);
        CHECK_FALSE(f.open(other.extents())); // far apart: not a mirror
        f.commit(other);
    }
    CHECK(program::read_image(dest) == other);
    {
        program::ImageFile f(dest);
        REQUIRE(f.open(want.extents()));
        f.commit(want); // its own vectors: written into the file
    }
    CHECK(io::read_bytes(dest) == program::encode(want));
    CHECK(names(dir.path()) == std::vector<std::string>{"p.ddr"});
}

TEST_CASE("an output staged and never published leaves the destination as it was and no temporary") {
    namespace fs = std::filesystem;
    const auto dir = fs::temp_directory_path() / ("cardsim-stage-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const auto dest = dir / "p";
    std::ofstream(dest) << "old";
    {
        io::AtomicFile f(dest);
        f.write("new");
        f.stage();
        CHECK(io::read_file(dest) == "old"); // staged: every byte written, nothing renamed yet
    }
    CHECK(io::read_file(dest) == "old");
    {
        io::AtomicFile f(dest);
        f.write("new");
        f.stage();
        f.publish();
    }
    CHECK(io::read_file(dest) == "new");
    // An image file staged (written in place, or whole) and dropped unpublished.
    const auto image = two_chunks();
    for (bool in_place : {true, false}) {
        program::ImageFile file(dest);
        if (in_place) REQUIRE(file.open(image.extents()));
        file.stage(image);
        CHECK(io::read_file(dest) == "new");
    }
    CHECK(io::read_file(dest) == "new");
    {
        program::ImageFile file(dest);
        file.stage(image);
        file.publish();
    }
    CHECK(program::read_image(dest).chunks.size() == 2);
    std::size_t files = 0;
    for (auto& e : fs::directory_iterator(dir)) {
        (void)e;
        ++files;
    }
    CHECK(files == 1);
    fs::remove_all(dir);
}

TEST_CASE("a temporary's name fits a file name and cuts a long one between UTF-8 characters") {
    // 84 three-byte characters (252 bytes) and ".x": 254 bytes, a legal file name.
    std::string name;
    for (int i = 0; i < 84; ++i)
        name += "\xe2\x82\xac"; // the euro sign
    name += ".x";
    const auto t = io::temporary_for(std::filesystem::path("/tmp") / name).filename().string();
    CHECK(t.size() <= 255);
    // The cut name is whole characters: 66 euro signs (198 bytes), not 200 bytes ending inside one.
    std::string kept;
    for (int i = 0; i < 66; ++i)
        kept += "\xe2\x82\xac";
    CHECK(t.starts_with("." + kept + ".tmp-"));
    // And it is found again as that destination's temporary (a failed command removes its own).
    CHECK(io::temporary_writer(t, name) == ::getpid());
}
