// Blessing replaces a golden trace atomically, after saying what changed.

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "fixtures.hpp"
#include "traces/bless.hpp"
#include "traces/writer.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace cardsim::traces;
namespace io = cardsim::io;
using namespace cardsim::traces::testing;

namespace {

/// The whole content behind an open file descriptor, read from its start.
std::string read_fd(int fd) {
    std::string out;
    char buf[4096];
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    return out;
}

ino_t inode(const std::filesystem::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_ino;
}

} // namespace

TEST_CASE("bless describes the change and then replaces the golden trace by the new one in one rename",
          "[traces][bless]") {
    ScratchDir dir("traces");
    auto golden = sample_trace();
    auto fresh = golden;
    fresh.records[3].end += 100;
    write_trace(dir / "golden.trace", golden);
    write_trace(dir / "new.trace", fresh);
    auto old_bytes = io::read_file(dir / "golden.trace");
    auto new_bytes = io::read_file(dir / "new.trace");
    REQUIRE(old_bytes != new_bytes);

    // A reader that has the golden file open keeps seeing the old, whole content: the file was
    // replaced by a rename, not truncated and rewritten in place.
    int fd = ::open((dir / "golden.trace").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    auto old_inode = inode(dir / "golden.trace");

    auto b = prepare_bless(dir / "new.trace", dir / "golden.trace");
    CHECK(!b.identical);
    CHECK_THAT(b.changes, Catch::Contains("command 3 (attention/attention)"));
    CHECK_THAT(b.changes, Catch::Contains("traces differ"));
    CHECK(io::read_file(dir / "golden.trace") == old_bytes); // preparing touches nothing
    apply(b);

    CHECK(io::read_file(dir / "golden.trace") == new_bytes);
    CHECK(read_fd(fd) == old_bytes);
    CHECK(inode(dir / "golden.trace") != old_inode);
    ::close(fd);
    CHECK(dir.files() == std::vector<std::string>{"golden.trace", "new.trace"}); // no temporary left
}

TEST_CASE("blessing an invalid new trace is an error and leaves the golden trace untouched",
          "[traces][bless]") {
    ScratchDir dir("traces");
    write_trace(dir / "golden.trace", sample_trace());
    auto before = io::read_file(dir / "golden.trace");
    auto broken = to_text(sample_trace());
    broken.resize(broken.size() - 8); // cut off the end line
    io::write_file_atomically(dir / "new.trace", broken);
    CHECK_THROWS_WITH(prepare_bless(dir / "new.trace", dir / "golden.trace"), Catch::Contains("new.trace:"));
    CHECK(io::read_file(dir / "golden.trace") == before);
}

TEST_CASE("blessing creates a missing golden trace and replaces an invalid one", "[traces][bless]") {
    ScratchDir dir("traces");
    write_trace(dir / "new.trace", sample_trace());
    auto created = prepare_bless(dir / "new.trace", dir / "golden.trace");
    CHECK_THAT(created.changes, Catch::Contains("does not exist yet"));
    apply(created);
    CHECK(io::read_file(dir / "golden.trace") == io::read_file(dir / "new.trace"));

    io::write_file_atomically(dir / "golden.trace", "not a trace\n");
    auto replaced = prepare_bless(dir / "new.trace", dir / "golden.trace");
    CHECK_THAT(replaced.changes, Catch::Contains("is not a valid trace"));
    apply(replaced);
    CHECK(io::read_file(dir / "golden.trace") == io::read_file(dir / "new.trace"));
}

TEST_CASE("blessing an identical trace changes nothing", "[traces][bless]") {
    ScratchDir dir("traces");
    write_trace(dir / "new.trace", sample_trace());
    write_trace(dir / "golden.trace", sample_trace());
    auto old_inode = inode(dir / "golden.trace");
    auto b = prepare_bless(dir / "new.trace", dir / "golden.trace");
    CHECK(b.identical);
    apply(b);
    CHECK(inode(dir / "golden.trace") == old_inode);
}
