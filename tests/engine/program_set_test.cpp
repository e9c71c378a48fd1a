// The program set file (engine/program/program_set.hpp): a set lowered for several buckets
// survives its file format byte for byte, names which bucket is which in its host maps, and every
// damaged or inconsistent set is refused naming the file and the place.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/program_set.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <xxhash.h>

using namespace cardsim;
using namespace cardsim::program;

namespace {

/// The set of buckets of 1, 2 and 4 token rows of a tiny hybrid on 3 slots of 8 positions.
ProgramSet tiny_set(const test::ScratchDir& dir) {
    models::SynthOptions so;
    so.arch = models::SynthArch::Hybrid;
    so.size = models::SynthSize::Tiny;
    so.seed = 3;
    models::make_model(so, dir / "m");
    auto m = models::load_model(dir / "m");
    auto built = models::build_graph(m);
    const std::vector<graph::Bucket> buckets{{1, 1, 0}, {2, 1, 0}, {4, 1, 0}};
    lower::Options o{buckets[0], 8};
    o.slots = 3;
    ProgramSet s;
    for (auto& c : lower::lower_set(built.graph, m.checkpoint, lower::target_of(card::default_card_config()),
                                    o, buckets))
        s.buckets.push_back(c.program);
    return s;
}

/// `bytes` with the trailing checksum recomputed (so a test reaches the checks after it).
std::vector<std::byte> resealed(std::vector<std::byte> bytes) {
    const auto n = bytes.size() - 8;
    auto h = XXH64(bytes.data(), n, 0);
    for (std::size_t i = 0; i < 8; ++i)
        bytes[n + i] = std::byte((h >> (8 * i)) & 0xff);
    return bytes;
}

} // namespace

TEST_CASE("a_set_survives_its_file_and_its_host_maps_say_which_bucket_is_which") {
    test::ScratchDir dir("set-roundtrip");
    auto s = tiny_set(dir);
    REQUIRE_FALSE(set_refusal(s));
    auto path = dir / "s.prog";
    write(s, path);
    auto back = read_set(path);
    CHECK(back == s);
    CHECK(encode(back) == encode(s));
    REQUIRE(back.buckets.size() == 3);
    CHECK(rows_list(back) == "1,2,4");
    for (auto& p : back.buckets) {
        CHECK(p.host.seqs == 1);
        CHECK(p.host.max_positions == 8);
        REQUIRE(p.host.entry(IoRole::Slots));
        CHECK(p.host.entry(IoRole::Slots)->width == 3);
    }
    CHECK(is_set(io::read_bytes(path)));
}

TEST_CASE("a_set_file_read_as_one_program_points_to_serve") {
    test::ScratchDir dir("set-as-program");
    auto path = dir / "s.prog";
    write(tiny_set(dir), path);
    CHECK_THROWS_WITH(read(path), Catch::Contains("program set") && Catch::Contains("cardsim serve"));
}

TEST_CASE("a_damaged_set_file_is_refused_by_its_checksum_naming_the_file") {
    test::ScratchDir dir("set-damaged");
    auto bytes = encode(tiny_set(dir));
    for (std::size_t at : {std::size_t(20), bytes.size() / 2, bytes.size() - 9}) {
        auto b = bytes;
        b[at] ^= std::byte{0x10};
        CHECK_THROWS_WITH(decode_set(b, "s.prog"), Catch::Contains("s.prog: checksum"));
    }
    auto cut = bytes;
    cut.resize(bytes.size() - 100);
    CHECK_THROWS_WITH(decode_set(cut, "s.prog"), Catch::Contains("s.prog"));
    std::vector<std::byte> tiny(bytes.begin(), bytes.begin() + 10);
    CHECK_THROWS_WITH(decode_set(tiny, "s.prog"), Catch::Contains("truncated"));
}

TEST_CASE("a_bucket_length_past_the_file_is_named_with_its_bucket") {
    test::ScratchDir dir("set-length");
    auto bytes = encode(tiny_set(dir));
    bytes[16 + 7] = std::byte{0x7f}; // bucket 0's length: far past the file
    CHECK_THROWS_WITH(decode_set(resealed(bytes), "s.prog"),
                      Catch::Contains("bucket 0") && Catch::Contains("run past the file"));
    auto zero = bytes;
    for (std::size_t i = 12; i < 16; ++i)
        zero[i] = std::byte{0};
    CHECK_THROWS_WITH(decode_set(resealed(zero), "s.prog"), Catch::Contains("0 buckets"));
}

TEST_CASE("buckets_out_of_order_or_on_other_stores_are_refused_naming_the_bucket") {
    test::ScratchDir dir("set-refused");
    auto s = tiny_set(dir);
    {
        auto t = s;
        std::swap(t.buckets[1], t.buckets[2]);
        // Swapped buckets keep disjoint program regions; the order is what is wrong.
        CHECK_THAT(set_refusal(t).value_or(""), Catch::Contains("increasing order of token rows"));
        CHECK_THROWS_WITH(decode_set(encode(t), "s.prog"), Catch::Contains("s.prog: set: bucket 2"));
    }
    {
        auto t = s;
        for (auto& r : t.buckets[1].regions)
            if (r.kind == Region::State) r.size += 64;
        CHECK_THAT(set_refusal(t).value_or(""), Catch::Contains("bucket 1's state region"));
    }
    {
        auto t = s;
        t.buckets[2].host.max_positions = 9;
        CHECK_THAT(set_refusal(t).value_or(""), Catch::Contains("bucket 2's slots hold 9 positions"));
    }
    {
        auto t = s;
        t.buckets[1].regions = t.buckets[0].regions; // its program region is bucket 0's
        CHECK_THAT(set_refusal(t).value_or(""), Catch::Contains("overlaps bucket 0's"));
    }
    {
        auto t = s;
        t.buckets.push_back(t.buckets.back());
        t.buckets.back().image_digest ^= 1;
        CHECK_THAT(set_refusal(t).value_or(""), Catch::Contains("another DDR image"));
    }
    CHECK_THAT(set_refusal(ProgramSet{}).value_or(""), Catch::Contains("0 buckets"));
}
