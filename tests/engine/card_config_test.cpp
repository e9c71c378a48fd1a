// The card config: the built-in default, files merged over it, --set overrides, errors naming
// the key, and the digest.

#include "engine/card/address_map.hpp"
#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace cardsim::card;

/// A config file `NAME.toml` in a scratch directory of its own, removed at scope exit.
struct TempToml {
    cardsim::test::ScratchDir dir{"card-config"};
    std::filesystem::path path;
    explicit TempToml(const std::string& text, const std::string& name = "card")
        : path(dir / (name + ".toml")) {
        std::ofstream(path) << text;
    }
};

/// The message of the cardsim::Error that `f` throws (fails the test if it throws none).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const cardsim::Error& e) {
        return e.what();
    }
    FAIL("expected a cardsim::Error");
    return {};
}

std::vector<Override> sets(std::initializer_list<const char*> texts) {
    std::vector<Override> out;
    for (auto t : texts)
        out.push_back(parse_override(t));
    return out;
}

} // namespace

TEST_CASE("the built-in default is the D5005 of the reference figures", "[card]") {
    const CardConfig c = default_card_config();
    CHECK(c.name == "d5005");
    CHECK(c.clock.kernel_mhz == 300.0);
    CHECK(c.ddr.channels == 4);
    CHECK(c.ddr.channel_bytes() == 8ull << 30);
    CHECK(c.ddr.total_bytes() == 32ull << 30);
    CHECK(c.ddr.data_bits == 64);
    CHECK(c.ddr.speed_mts == 2400);
    CHECK(c.ddr.channel_peak_bytes_per_second() == 19.2e9);
    CHECK(c.ddr.burst_bytes() == 64);
    CHECK(c.ddr.tck_ps() == Approx(833.333).epsilon(1e-6));
    const auto& t = c.ddr.timing;
    CHECK(std::vector<std::uint32_t>{t.cl, t.cwl, t.trcd, t.trp, t.tras, t.tccd_s, t.tccd_l, t.trrd_s,
                                     t.trrd_l, t.tfaw} ==
          std::vector<std::uint32_t>{17, 12, 17, 17, 39, 4, 6, 4, 6, 26});
    CHECK(t.trfc == 420);   // 350 ns
    CHECK(t.trefi == 9360); // 7.8 us
    CHECK(t.burst_length == 8);
    CHECK(c.ddr.geometry.bank_groups == 4);
    CHECK(c.ddr.geometry.banks_per_group == 4);
    CHECK(c.ddr.geometry.row_bytes == 8192);
    CHECK(c.ddr.controller.address_map == "row:bank:column:bankgroup");
    CHECK(c.ddr.controller.page_policy == PagePolicy::Open);
    CHECK(c.ddr.controller.scheduler == SchedulerKind::FrFcfs);
    CHECK(c.ddr.geometry.ranks == 1);
    CHECK(c.sram.bytes == 7000ull * 20 * 1024 / 8); // 7,000 of the 11,721 M20K blocks
    for (auto kind : all_unit_kinds)
        CHECK(c.units.has(kind) == !is_optional(kind));
    CHECK_FALSE(c.gelu());
    CHECK_FALSE(c.windowed_attention());
    CHECK_FALSE(c.units.matvec.bias);
    CHECK_FALSE(c.capabilities.experts);
    CHECK(c.system.cards == 1);
    CHECK(c.system.topology == Topology::Ring);
    CHECK(c.link.gbps == 40.0);        // 4 x 10.3125 Gb/s lanes at 64b/66b
    CHECK(c.link.latency_ns == 304.0); // Serial Lite III at 6 x 12.5 Gb/s (683330)
    CHECK(c.link.ports == 2);          // the D5005's two QSFP28 cages
    CHECK(c.numerics == cardsim::numerics::EngineNumerics{});
    CHECK(c.weights.code_bits == 8);
    CHECK(c.weights.block_size == 32);
    CHECK_FALSE(c.weights.group_size.has_value());
    CHECK(c.weights.scale == ScaleKind::E8M0);
}

TEST_CASE("the shipped configs/d5005.toml is the compiled-in default", "[card]") {
    std::ifstream in(std::string(CARDSIM_SOURCE_DIR) + "/configs/d5005.toml", std::ios::binary);
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    CHECK(text.str() == default_card_config_text());
}

TEST_CASE("a config file is merged over the default: absent keys keep their defaults", "[card]") {
    TempToml f("[ddr]\nchannels = 2\n[units.gelu]\ncount = 1\n");
    const CardConfig c = load_card_config(f.path);
    CHECK(c.ddr.channels == 2);
    CHECK(c.ddr.speed_mts == 2400);
    CHECK(c.units[UnitKind::Gelu].count == 1);
    CHECK(c.units[UnitKind::Gelu].width == 64);
    CHECK(c.gelu());
}

TEST_CASE("overrides apply after the file, in order, with TOML values or bare words", "[card]") {
    TempToml f("[ddr]\nchannels = 2\n");
    const auto o = sets({"ddr.channels=1", "ddr.channels = 3", "numerics.cache=int8",
                         "ddr.controller.address_map=row:bank:bankgroup:column", "weights.block_size=64",
                         "clock.kernel_mhz=331", "units.attention.window=true",
                         "ddr.controller.page_policy=\"closed\""});
    const CardConfig c = load_card_config(f.path, o);
    CHECK(c.ddr.channels == 3);
    CHECK(c.numerics.cache == cardsim::numerics::CacheFormat::Int8);
    CHECK(c.ddr.controller.address_map == "row:bank:bankgroup:column");
    CHECK(c.weights.block_size == 64u);
    CHECK(c.clock.kernel_mhz == 331.0);
    CHECK(c.windowed_attention());
    CHECK(c.ddr.controller.page_policy == PagePolicy::Closed);
}

TEST_CASE("an unknown key in a file is an error naming the file, line and key", "[card]") {
    TempToml f("# comment\n[ddr]\nchannels = 2\nchanels = 3\n");
    const std::string e = error_of([&] { load_card_config(f.path); });
    CHECK_THAT(e, Catch::Contains(f.path.string() + ":4"));
    CHECK_THAT(e, Catch::Contains("unknown key `ddr.chanels`"));
    CHECK_THAT(e, Catch::Contains("channels"));
    CHECK_THAT(error_of([&] { load_card_config({}, sets({"units.relu.count=1"})); }),
               Catch::Contains("--set units.relu.count=1: unknown key `units.relu`"));
}

TEST_CASE("a value of the wrong type is an error naming the key and the expected type", "[card]") {
    TempToml f("[ddr]\nchannels = \"four\"\n");
    const std::string e = error_of([&] { load_card_config(f.path); });
    CHECK_THAT(e, Catch::Contains(f.path.string() + ":2"));
    CHECK_THAT(e, Catch::Contains("`ddr.channels` is a string"));
    CHECK_THAT(e, Catch::Contains("expected an integer in 1..64"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.geometry=4"})); }),
               Catch::Contains("`ddr.geometry` is an integer (4); expected a table"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"units.matvec.bias=1"})); }),
               Catch::Contains("`units.matvec.bias` is an integer (1); expected true or false"));
}

TEST_CASE("an out-of-range value is an error naming the key and the range", "[card]") {
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.channels=0"})); }),
               Catch::Contains("--set ddr.channels=0: `ddr.channels` is 0; expected an integer in 1..64"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.data_bits=48"})); }),
               Catch::Contains("`ddr.data_bits` is 48; expected one of 8, 16, 32, 64, 128"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"clock.kernel_mhz=0.5"})); }),
               Catch::Contains("`clock.kernel_mhz` is 0.5; expected a number in 1..2000"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"units.matvec.count=-1"})); }),
               Catch::Contains("`units.matvec.count` is -1"));
}

TEST_CASE("an unknown spelling of an enum or knob is an error listing the spellings", "[card]") {
    CHECK_THAT(
        error_of([] { load_card_config({}, sets({"ddr.controller.page_policy=ajar"})); }),
        Catch::Contains("`ddr.controller.page_policy` is \"ajar\"; expected one of \"open\" | \"closed\""));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"numerics.cache=int4"})); }),
               Catch::Contains("`numerics.cache` is invalid") && Catch::Contains("int8_hadamard"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"weights.group_size=rows"})); }),
               Catch::Contains("`weights.group_size`") && Catch::Contains("\"row\" or a positive integer"));
}

TEST_CASE("a key the rest of the config leaves unread is refused when set, never accepted and ignored",
          "[card]") {
    const auto refused = [](std::initializer_list<const char*> set, const std::string& key) {
        INFO(key);
        const auto overrides = sets(set);
        CHECK_THAT(error_of([&] { load_card_config({}, overrides); }),
                   Catch::Contains("`" + key + "`: nothing reads it"));
    };
    const char* fcfs = "ddr.controller.scheduler=fcfs";
    refused({fcfs, "ddr.controller.bank_queue_depth=4"}, "ddr.controller.bank_queue_depth");
    refused({fcfs, "ddr.controller.starvation_limit=3"}, "ddr.controller.starvation_limit");
    refused({fcfs, "ddr.controller.stagger_row_switches=false"}, "ddr.controller.stagger_row_switches");
    refused({fcfs, "ddr.controller.write_high_watermark=16"}, "ddr.controller.write_high_watermark");
    refused({"ddr.controller.write_queue=0", "ddr.controller.write_low_watermark=4"},
            "ddr.controller.write_low_watermark");
    refused({"ddr.timing.trtrs=5"}, "ddr.timing.trtrs");
    refused({"units.router.width=4"}, "units.router.width");
    refused({"units.router.resolve_latency=99"}, "units.router.resolve_latency");
    refused({"fit.units.router.alm_fixed=1e6"}, "fit.units.router.alm_fixed");
    // Where they are read, the same keys are taken; left at their defaults, they are no error.
    CHECK_NOTHROW(load_card_config(
        {}, sets({"ddr.controller.bank_queue_depth=4", "ddr.timing.trtrs=5", "ddr.geometry.ranks=2"})));
    CHECK_NOTHROW(load_card_config({}, sets({"capabilities.experts=true", "units.router.width=4"})));
    CHECK_NOTHROW(load_card_config({}, sets({"units.router.count=0"}))); // what it reads as without experts
    refused({"units.router.count=2"}, "units.router.count");
    CHECK_NOTHROW(load_card_config({}, sets({fcfs, "ddr.controller.write_queue=8"})));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"fit.clock.full_mhz=1000"})); }),
               Catch::Contains("`fit.clock.full_mhz`: 1000 MHz is above base_mhz"));
}

TEST_CASE("a clash of two keys is named where the user set one, not in the built-in file", "[card]") {
    const std::string e = error_of([] { load_card_config({}, sets({"ddr.controller.write_queue=1"})); });
    CHECK_THAT(e, Catch::StartsWith("--set ddr.controller.write_queue=1:") &&
                      Catch::Contains("less than the write high watermark (32)") &&
                      !Catch::Contains("built in"));
    CHECK_THAT(
        error_of([] {
            load_card_config({},
                             sets({"ddr.controller.write_queue=8", "ddr.controller.write_high_watermark=9"}));
        }),
        Catch::Contains("`ddr.controller.write_high_watermark`: 9 is more than the write queue (8 bursts)"));
}

TEST_CASE("an override given another way is named as the user gave it", "[card]") {
    Override knob{"numerics.scaling", "foo", "--knob scaling=foo"};
    const std::string e = error_of([&] { load_card_config({}, std::span<const Override>(&knob, 1)); });
    CHECK_THAT(e, Catch::StartsWith("--knob scaling=foo:") && !Catch::Contains("--set"));
}

TEST_CASE("combinations no single range catches are errors naming the key", "[card]") {
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.controller.address_map=row:bank:column"})); }),
               Catch::Contains("`ddr.controller.address_map`") &&
                   Catch::Contains("`bankgroup` is given 0 bits"));
    CHECK_THAT(
        error_of([] { load_card_config({}, sets({"ddr.controller.address_map=row:bank:col:bankgroup"})); }),
        Catch::Contains("`col` is not a field"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.capacity_mib=6000"})); }),
               Catch::Contains("`ddr.capacity_mib`") && Catch::Contains("power-of-two number of rows"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.interleave_bytes=100"})); }),
               Catch::Contains("`ddr.interleave_bytes`: 100 is not a multiple of the 64-byte burst"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.timing.tck_ps=625"})); }),
               Catch::Contains(
                   "--set ddr.timing.tck_ps=625: `ddr.timing.tck_ps`: 625 ps disagrees with speed_mts 2400"));
    CHECK(load_card_config({}, sets({"ddr.timing.tck_ps=833.333"})).ddr.speed_mts == 2400);
    CHECK_THAT(error_of([] { load_card_config({}, sets({"weights.group_size=48"})); }),
               Catch::Contains("`weights.group_size`: 48 is not a multiple of block_size 32"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.timing.trefi=400"})); }),
               Catch::Contains("`ddr.timing.trefi`: 400 cycles is not more than trfc"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.geometry.ranks=3"})); }),
               Catch::Contains("`ddr.geometry.ranks`: expected a power of two"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.controller.write_high_watermark=40"})); }),
               Catch::Contains("`ddr.controller.write_high_watermark`: 40 is more than the write queue"));
    CHECK_THAT(error_of([] {
                   load_card_config({}, sets({"ddr.controller.write_high_watermark=16",
                                              "ddr.controller.write_low_watermark=20"}));
               }),
               Catch::Contains("`ddr.controller.write_low_watermark`: 20 is not below the high watermark"));
    // A batch drains the queue down to the low watermark: equal to the high one it would drain
    // nothing (the scheduler served one write a batch, as high - 1 does, so it is refused).
    CHECK_THAT(
        error_of([] {
            load_card_config({}, sets({"ddr.controller.write_high_watermark=16",
                                       "ddr.controller.write_low_watermark=16"}));
        }),
        Catch::Contains("`ddr.controller.write_low_watermark`: 16 is not below the high watermark (16)"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr.controller.write_high_watermark=0"})); }),
               Catch::Contains("`ddr.controller.write_high_watermark`: 0: a write batch starts"));
    CHECK_NOTHROW(load_card_config(
        {}, sets({"ddr.controller.write_high_watermark=16", "ddr.controller.write_low_watermark=15"})));
    // Two ranks halve the rows of each bank; the rank bits lead an address map that names none.
    const auto two = load_card_config({}, sets({"ddr.geometry.ranks=2"}));
    CHECK(cardsim::card::AddressMap::build(two.ddr).field_bits(cardsim::card::DramField::Row) == 15);
    CHECK(cardsim::card::AddressMap::build(two.ddr).decode(4ull << 30).rank == 1);
}

TEST_CASE("a feature no command carries is refused by the config, not granted by check and lost in run",
          "[card]") {
    // Each names its key and why the card cannot honour it.
    CHECK_THAT(error_of([] { load_card_config({}, sets({"units.matvec.scale=true"})); }),
               Catch::Contains("`units.matvec.scale`: true: the matvec command has no scale operand"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"units.embed.scale=true"})); }),
               Catch::Contains("`units.embed.scale`: true: the embed command has no scale operand"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"capabilities.relu=true"})); }),
               Catch::Contains("`capabilities.relu`: true: the card has no ReLU command"));
    CHECK_THAT(
        error_of([] { load_card_config({}, sets({"weights.group_size=128"})); }),
        Catch::Contains("`weights.group_size`: 128: the matvec sums each output's whole row exactly") &&
            Catch::Contains("the only group size is \"row\""));
    // Their defaults load.
    const CardConfig c = load_card_config({}, sets({"units.matvec.scale=false", "units.embed.scale=false",
                                                    "capabilities.relu=false", "weights.group_size=row"}));
    CHECK(c == default_card_config());
}

TEST_CASE("bad files and bad --set arguments are errors saying what was expected", "[card]") {
    CHECK_THAT(error_of([] { load_card_config(std::filesystem::path("/nonexistent/card.toml")); }),
               Catch::Contains("cannot read card config `/nonexistent/card.toml`"));
    TempToml bad("[ddr\nchannels = 2\n");
    CHECK_THAT(error_of([&] { load_card_config(bad.path); }),
               Catch::Contains(bad.path.string() + ":1:") && Catch::Contains("not valid TOML"));
    CHECK_THAT(error_of([] { parse_override("ddr.channels"); }), Catch::Contains("expected path=value"));
    CHECK_THAT(error_of([] { load_card_config({}, sets({"ddr..channels=2"})); }),
               Catch::Contains("is not a dotted key path"));
}

TEST_CASE("the digest ignores formatting, comments, key order and the name, and sees every value", "[card]") {
    const CardConfig d = default_card_config();
    // The canonical text is TOML that loads back to the same config.
    TempToml canon(canonical_text(d));
    const CardConfig back = load_card_config(canon.path);
    CHECK(back == d);
    CHECK(digest(back) == digest(d));
    // Same values, other layout and name: same digest.
    TempToml other("name = \"my card\"\n[ddr.timing]\ncwl=12 # same\ncl = 17\n[ddr]\nchannels=4\n");
    const CardConfig o = load_card_config(other.path);
    CHECK(o.name == "my card");
    CHECK(digest(o) == digest(d));
    CHECK(digest_hex(o).size() == 16);
    // Any value changed: another digest.
    for (const char* s : {"ddr.channels=2", "ddr.timing.cl=18", "numerics.state=f16", "units.gelu.count=1",
                          "weights.scale=f16", "sram.bytes=1000", "ddr.port_bits=1024"})
        CHECK(digest(load_card_config({}, sets({s}))) != digest(d));
}

TEST_CASE("the system and its links are not in the card's digest, which is the one from before they existed",
          "[card]") {
    // The card the golden traces run on (configs/golden.toml, the default before the design sweep)
    // keeps its digest when `capabilities.cards` moved to `system.cards` and when the system and its
    // links arrived; it moved twice since: with `ddr.controller.stagger_row_switches` (default true:
    // another scheduler, though its cycles on the golden traces are the same), and with
    // `ddr.port_bits` (the user port, through which a write now crosses a beat a kernel cycle).
    CHECK(digest_hex(load_card_config(std::string(CARDSIM_SOURCE_DIR) + "/configs/golden.toml")) ==
          "0df4cf67778ab914");
    const CardConfig d = default_card_config();
    for (const char* s : {"system.cards=4", "system.topology=pairs", "link.gbps=100", "link.latency_ns=143",
                          "link.ports=1", "link.frame_payload_bytes=9000", "link.frame_overhead_bytes=0"}) {
        const CardConfig c = load_card_config({}, sets({s}));
        CHECK(c != d);
        CHECK(digest(c) == digest(d));
    }
    // Capability flags added later (gpt-oss's units) keep a card without them at its old digest, and
    // are in the digest of a card that sets them.
    for (const char* s : {"units.rotation.yarn=true", "units.silu_mul.clamp=true"})
        CHECK(digest(load_card_config({}, sets({s}))) != digest(d));
}

TEST_CASE("capabilities.cards is refused naming where the card count went", "[card]") {
    try {
        load_card_config({}, sets({"capabilities.cards=2"}));
        FAIL("capabilities.cards was accepted");
    } catch (const cardsim::Error& e) {
        CHECK(std::string(e.what()).find("system.cards") != std::string::npos);
    }
}

TEST_CASE("a link's time is its frames' wire bytes at its rate plus one hop", "[card]") {
    const auto l = default_card_config().link;
    // 3000 bytes: two full frames of 1500, each 38 bytes of overhead, at 40 Gb/s, plus 304 ns.
    CHECK(l.seconds(3000) == Approx((3000 + 2 * 38) * 8 / 40e9 + 304e-9));
    CHECK(l.seconds(3001) == Approx((3001 + 3 * 38) * 8 / 40e9 + 304e-9));
    CHECK(l.seconds(3000, 2) == Approx((3000 + 2 * 38) * 8 / 80e9 + 304e-9));
    CHECK(l.seconds(0) == Approx(304e-9));
}
