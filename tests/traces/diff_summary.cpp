// trace diff's summary and attribution: the total, the phases and units, each command reported for
// its own duration and named waits (not for a start an earlier command moved), the config keys by
// name, the listing limits, the layer sites of a program, and the JSON and CSV of the same report.

#include "fixtures.hpp"
#include "traces/config_keys.hpp"
#include "traces/diff.hpp"
#include "traces/diff_export.hpp"
#include "traces/reader.hpp"
#include "traces/sites.hpp"
#include "traces/summary.hpp"
#include "traces/xxh64.hpp"

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <sstream>

using namespace cardsim;
using namespace cardsim::traces;
using namespace cardsim::traces::testing;

namespace {

/// A timing-only run of a three-command program (embed, matvec, argmax) twice: step 0 is the
/// prefill (commands 0-2), step 1 a decode step (commands 3-5, pc 0-2).
Trace two_steps() {
    Trace t;
    t.header.program = 0x1111;
    t.header.config = 0x2222;
    t.header.mode = Mode::TimingOnly;
    t.header.meta = {{std::string(prefill_steps_meta), "1"}};
    auto add = [&](std::uint64_t index, std::string unit, std::uint64_t start, std::uint64_t end) {
        Record r;
        r.index = index;
        r.pc = index % 3;
        r.unit = unit;
        r.opcode = unit;
        r.start = start;
        r.end = end;
        r.read = 64;
        r.written = 16;
        t.records.push_back(r);
    };
    add(0, "embed", 0, 10);
    add(1, "matvec", 10, 110);
    add(2, "argmax", 110, 120);
    add(3, "embed", 130, 140);
    add(4, "matvec", 140, 240);
    add(5, "argmax", 240, 250);
    return t;
}

/// `t` with command `index` lasting `extra` cycles longer and every command after it (in time)
/// starting that much later: what one slowed command does to a run.
Trace slowed(Trace t, std::uint64_t index, std::uint64_t extra) {
    auto at = t.records.at(index).end;
    t.records[index].end += extra;
    for (auto& r : t.records)
        if (r.index != index && r.start >= at) {
            r.start += extra;
            r.end += extra;
        }
    return t;
}

/// The indices a report's duration list holds, in its order.
std::vector<std::uint64_t> duration_indices(const DiffReport& r) {
    std::vector<std::uint64_t> out;
    for (auto& d : r.durations)
        out.push_back(d.index);
    return out;
}

/// The waits the test traces carry, per record (a stand-in for a format field, issue 13).
std::map<const Record*, std::vector<WaitPart>>& test_waits() {
    static std::map<const Record*, std::vector<WaitPart>> waits;
    return waits;
}

std::vector<WaitPart> waits_of(const Record& r) {
    auto it = test_waits().find(&r);
    return it == test_waits().end() ? std::vector<WaitPart>{} : it->second;
}

/// The config of the default card with `--set path=value` overrides.
card::CardConfig card_with(std::vector<card::Override> overrides) {
    return card::parse_card_config("", "test", overrides);
}

/// A header recording `config` (its digest and the keys that differ from the default card).
Header header_of(const card::CardConfig& config) {
    Header h;
    h.config = card::digest(config);
    record_config(h, config);
    return h;
}

} // namespace

TEST_CASE("a slowed command is the only one reported for its duration although every later start moved",
          "[traces][diff][attribution]") {
    auto a = two_steps();
    auto b = slowed(a, 1, 50);
    DiffOptions o;
    auto r = diff(a, b, o);
    CHECK(duration_indices(r) == std::vector<std::uint64_t>{1});
    CHECK(r.durations[0].a == 100);
    CHECK(r.durations[0].b == 150);
    CHECK(r.durations[0].phase == "prefill");
    CHECK(r.durations_changed == 1);
    CHECK(r.positions.empty()); // starts are not compared without a start tolerance
    CHECK(r.total.a == 250);
    CHECK(r.total.b == 300);
    CHECK(r.total.over);
    CHECK(!r.agree());
    CHECK_THAT(r.verdict(), Catch::StartsWith("traces differ: total cycles +20.00% (over 0%), 1 command with "
                                              "durations over 0%"));
    // The old comparison of every position lists everything after it.
    o.start_tol_pct = 0;
    auto positions = diff(a, b, o);
    REQUIRE(positions.positions.size() == 5);
    CHECK(positions.positions[0].index == 1);
    CHECK(!positions.positions[0].start);
    CHECK(positions.positions[0].end);
    CHECK(positions.positions[4].index == 5);
    CHECK(duration_indices(positions) == std::vector<std::uint64_t>{1});
}

TEST_CASE("the tolerance applies to each duration and to the total", "[traces][diff][attribution]") {
    auto a = two_steps();
    auto b = slowed(a, 1, 50); // matvec +50%, total 250 -> 300 (+20%)
    DiffOptions o;
    o.cycles_tol_pct = 25;
    auto r = diff(a, b, o);
    CHECK(duration_indices(r) == std::vector<std::uint64_t>{1});
    CHECK(!r.total.over);
    o.cycles_tol_pct = 50; // exactly 50%: not more than it
    CHECK(diff(a, b, o).agree());
    o.cycles_tol_pct = 19.9;
    auto tight = diff(a, b, o);
    CHECK(tight.total.over);
}

TEST_CASE("the phases are the prefill and each decode step and add up to the total",
          "[traces][diff][summary]") {
    auto a = two_steps();
    auto b = slowed(a, 4, 30); // the decode step's matvec
    auto r = diff(a, b, DiffOptions{});
    REQUIRE(r.phases.size() == 2);
    CHECK(r.phases[0].name == "prefill");
    CHECK(r.phases[1].name == "decode 1");
    CHECK(r.phases[0].cycles_a == 120);
    CHECK(r.phases[0].cycles_b == 120);
    CHECK(r.phases[1].cycles_a == 130);
    CHECK(r.phases[1].cycles_b == 160);
    CHECK(r.phases[0].commands_a == 3);
    CHECK(r.phases[0].cycles_a + r.phases[1].cycles_a == r.total.a);
    CHECK(r.phases[0].cycles_b + r.phases[1].cycles_b == r.total.b);
    REQUIRE(r.durations.size() == 1);
    CHECK(r.durations[0].phase == "decode 1");

    SECTION("without prefill_steps each step is a phase") {
        a.header.meta.clear();
        b.header.meta.clear();
        auto steps = diff(a, b, DiffOptions{});
        REQUIRE(steps.phases.size() == 2);
        CHECK(steps.phases[0].name == "step 0");
        CHECK(steps.phases[1].name == "step 1");
    }
    SECTION("several prefill steps make one phase") {
        a.header.meta[std::string(prefill_steps_meta)] = "2";
        auto prefill = diff(a, b, DiffOptions{});
        REQUIRE(prefill.phases.size() == 1);
        CHECK(prefill.phases[0].name == "prefill");
        CHECK(prefill.phases[0].first_step == 0);
        CHECK(prefill.phases[0].last_step == 1);
        CHECK(prefill.phases[0].cycles_b == prefill.total.b);
    }
    SECTION("a trace without pc fields is one step") {
        for (auto* t : {&a, &b})
            for (auto& rec : t->records)
                rec.pc.reset();
        auto one = diff(a, b, DiffOptions{});
        REQUIRE(one.phases.size() == 1);
        CHECK(one.phases[0].name == "prefill");
    }
}

TEST_CASE("the units are each unit's busy cycles and bytes, the largest change first",
          "[traces][diff][summary]") {
    auto a = sample_trace();
    auto b = a;
    b.records[2].end += 50; // norm: 200 -> 250 busy
    b.records[1].end += 7;  // matvec: overlaps its later commands, so busy grows by 7 at most
    auto r = diff(a, b, DiffOptions{});
    auto sa = summarise(a), sb = summarise(b);
    REQUIRE(r.units.size() == sa.units.size());
    CHECK(r.units[0].unit == "norm");
    CHECK(r.units[0].busy_a == 200);
    CHECK(r.units[0].busy_b == 250);
    for (std::size_t k = 1; k < r.units.size(); ++k) {
        auto d = [](const UnitChange& u) {
            return u.busy_a > u.busy_b ? u.busy_a - u.busy_b : u.busy_b - u.busy_a;
        };
        CHECK(d(r.units[k - 1]) >= d(r.units[k]));
    }
    for (auto& u : sb.units) {
        auto it = std::find_if(r.units.begin(), r.units.end(), [&](auto& x) { return x.unit == u.unit; });
        REQUIRE(it != r.units.end());
        CHECK(it->busy_b == u.busy_cycles);
        CHECK(it->read_b == u.read);
        CHECK(it->written_b == u.written);
        CHECK(it->commands_b == u.commands);
    }
    auto text = to_text(r);
    auto units = text.find("units, the largest change in busy cycles first:\n");
    REQUIRE(units != std::string::npos);
    auto first_row = text.substr(text.find('\n', text.find('\n', units) + 1) + 1);
    CHECK_THAT(first_row, Catch::StartsWith("  norm "));
}

TEST_CASE("the top N lists the largest duration changes first and all lists every one",
          "[traces][diff][listing]") {
    auto a = two_steps();
    auto b = a;
    b.records[0].end += 5;  // embed 10 -> 15 (+50%)
    b.records[1].end += 50; // matvec 100 -> 150 (+50%)
    b.records[2].end += 1;  // argmax 10 -> 11 (+10%: not over 10%)
    b.records[4].end += 20; // matvec 100 -> 120 (+20%)
    DiffOptions o;
    o.cycles_tol_pct = 10;
    o.top = 2;
    auto r = diff(a, b, o);
    CHECK(duration_indices(r) == std::vector<std::uint64_t>{1, 4, 0});
    CHECK(r.durations_changed == 4);
    auto text = to_text(r);
    CHECK_THAT(text, Catch::Contains("durations over 10%: 3 commands of 6 paired (4 changed at all); the 2 "
                                     "largest changes:\n"));
    CHECK_THAT(text, Catch::Contains("  ... and 1 more (--all lists every one)\n"));
    auto json = boost::json::parse(to_json(r, "a", "b")).as_object();
    CHECK(json.at("durations").at("over").as_int64() == 3);
    CHECK(json.at("durations").at("listed").as_array().size() == 2);
    o.all = true;
    auto all = diff(a, b, o);
    CHECK_THAT(to_text(all), !Catch::Contains("more (--all"));
    CHECK(boost::json::parse(to_json(all, "a", "b")).at("durations").at("listed").as_array().size() == 3);
    o.all = false;
    o.top = 0;
    CHECK_THAT(to_text(diff(a, b, o)), Catch::Contains("  ... and 3 more"));
}

TEST_CASE("named waits are compared by name and a wait over the tolerance reports its command",
          "[traces][diff][waits]") {
    auto a = two_steps();
    auto b = a;
    test_waits().clear();
    // Command 1 waits 10 cycles for its dependencies and 40 for DDR refresh in A, 10 and 90 in B,
    // its duration unchanged; command 4 carries the fields on one side only.
    test_waits()[&a.records[1]] = {{"dependency", 10}, {"ddr_refresh", 40}};
    test_waits()[&b.records[1]] = {{"dependency", 10}, {"ddr_refresh", 90}};
    test_waits()[&b.records[4]] = {{"dependency", 5}};
    DiffOptions o;
    o.cycles_tol_pct = 5;
    o.waits = waits_of;
    auto r = diff(a, b, o);
    REQUIRE(duration_indices(r) == std::vector<std::uint64_t>{1});
    auto& d = r.durations[0];
    CHECK(!d.over);
    REQUIRE(d.waits.size() == 2);
    CHECK(d.waits[0].name == "dependency");
    CHECK(!d.waits[0].over);
    CHECK(d.waits[1].name == "ddr_refresh");
    CHECK(d.waits[1].over);
    CHECK(d.magnitude() == 50);
    CHECK_THAT(to_text(r), Catch::Contains("waits: ddr_refresh 40 -> 90 (+50) over"));
    auto matvec = std::find_if(r.units.begin(), r.units.end(), [](auto& u) { return u.unit == "matvec"; });
    REQUIRE(matvec != r.units.end());
    REQUIRE(matvec->waits.size() == 2);
    CHECK(matvec->waits[0].name == "ddr_refresh");
    CHECK(matvec->waits[0].a == 40u);
    CHECK(matvec->waits[0].b == 90u);
    CHECK(matvec->waits[1].name == "dependency");
    CHECK(matvec->waits[1].b == 15u);
    auto json = boost::json::parse(to_json(r, "a", "b"));
    auto& listed = json.at("durations").at("listed").as_array();
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].at("waits").as_array()[1].at("name").as_string() == "ddr_refresh");
    CHECK(listed[0].at("waits").as_array()[1].at("delta").as_int64() == 50);
    CHECK(listed[0].at("waits").as_array()[1].at("over").as_bool());
    // The default reader of a format version 1 record finds no waits.
    CHECK(record_waits(a.records[1]).empty());
    test_waits().clear();
}

TEST_CASE("config keys that differ are named with both values and checked against the digests",
          "[traces][diff][config]") {
    auto def = card::default_card_config();
    auto two = card_with({{"ddr.channels", "2"}, {"units.embed.latency", "200"}});
    Trace a, b;
    a.header = header_of(def);
    b.header = header_of(two);
    CHECK(b.header.meta.at("config.ddr.channels") == "2");
    CHECK(b.header.meta.at("config.units.embed.latency") == "200");
    CHECK(a.header.meta.count("config.ddr.channels") == 0); // only keys that differ from the default
    CHECK(a.header.meta.at(std::string(config_default_key)) ==
          b.header.meta.at(std::string(config_default_key)));
    auto r = diff(a, b, DiffOptions{});
    REQUIRE(r.config.size() == 2);
    CHECK(r.config[0].key == "ddr.channels");
    CHECK(r.config[0].a == "4");
    CHECK(r.config[0].a_default);
    CHECK(r.config[0].b == "2");
    CHECK(!r.config[0].b_default);
    CHECK(r.config[1].key == "units.embed.latency");
    CHECK(r.notes.empty()); // both records describe their digests; config meta is not a meta note
    CHECK_THAT(to_text(r), Catch::Contains("config: ddr.channels: A 4 (default) vs B 2\n"));
    REQUIRE(r.header.size() == 1);
    CHECK(r.header[0].field == "config");

    SECTION("a record that does not give the digest is a note") {
        b.header.meta["config.ddr.channels"] = "3";
        auto tampered = diff(a, b, DiffOptions{});
        REQUIRE(tampered.notes.size() == 1);
        CHECK_THAT(tampered.notes[0], Catch::StartsWith("B: its config keys over the default card give the "
                                                        "config digest"));
    }
    SECTION("a header without config keys, as before they were recorded, is named by its digest only") {
        for (auto it = a.header.meta.begin(); it != a.header.meta.end();)
            it = is_config_meta(it->first) ? a.header.meta.erase(it) : std::next(it);
        auto old = diff(a, b, DiffOptions{});
        CHECK(old.config.empty());
        REQUIRE(old.notes.size() == 1);
        CHECK_THAT(old.notes[0], Catch::StartsWith("config keys: only B records them"));
    }
    SECTION("keys relative to another default card are not checked against this build's") {
        b.header.meta[std::string(config_default_key)] = "0123456789abcdef";
        auto other = diff(a, b, DiffOptions{});
        REQUIRE(other.notes.size() == 1);
        CHECK_THAT(other.notes[0], Catch::Contains("relative to another default card"));
    }
    SECTION("config keys without their default digest are a malformed record") {
        b.header.meta.erase(std::string(config_default_key));
        auto bad = recorded_config(b.header);
        CHECK(!bad.config);
        REQUIRE(bad.problem);
        CHECK_THAT(*bad.problem, Catch::Contains("no config_default line"));
    }
}

TEST_CASE("a golden trace written before config keys were recorded reads and agrees with itself",
          "[traces][diff][config]") {
    auto golden = read_trace(std::filesystem::path(CARDSIM_SOURCE_DIR) / "traces/golden/hybrid-sub32.trace");
    // Today's golden traces record their config: take the record out, as a trace written before.
    std::erase_if(golden.header.meta, [](const auto& m) {
        return m.first == config_default_key || m.first.starts_with(config_key_prefix);
    });
    auto read = recorded_config(golden.header);
    CHECK(!read.config);
    CHECK(!read.problem);
    auto r = diff(golden, golden, 0.0);
    CHECK(r.agree());
    CHECK(r.notes.empty());
}

TEST_CASE("with different channel counts the ddr bytes are compared over all channels",
          "[traces][diff][shape]") {
    auto a = sample_trace();
    auto b = a;
    b.header.ddr_channels = 2;
    for (auto& r : b.records) {
        std::vector<ChannelBytes> two(2);
        for (std::size_t c = 0; c < r.ddr.size(); ++c) {
            two[c % 2].read += r.ddr[c].read;
            two[c % 2].written += r.ddr[c].written;
        }
        r.ddr = two;
    }
    auto same_bytes = diff(a, b, DiffOptions{});
    CHECK(same_bytes.shapes.empty());
    REQUIRE(same_bytes.header.size() == 1);
    CHECK(same_bytes.header[0].field == "ddr_channels");
    b.records[2].ddr[1].read += 64;
    auto more = diff(a, b, DiffOptions{});
    REQUIRE(more.shapes.size() == 1);
    CHECK(more.shapes[0].index == 2);
    CHECK(more.shapes[0].field == "ddr.read");
}

TEST_CASE("a program's layer probes give each command its layer and copies their value",
          "[traces][diff][sites]") {
    using namespace cardsim::program;
    Program p;
    p.regions = {{Region::Arena, Space::Sram, 0, 4096}, {Region::Io, Space::Ddr, 0x10000, 1024}};
    auto command = [&](bool to_io, std::uint64_t io_offset) {
        Command c;
        c.opcode = Opcode::Copy;
        c.unit = Unit::Dma;
        c.operands = {{Region::Arena, Access::Read, 0, 64},
                      {to_io ? Region::Io : Region::Arena, Access::Write, to_io ? io_offset : 64, 64}};
        p.commands.push_back(c);
    };
    auto probe = [&](std::uint32_t layer, std::uint64_t offset) {
        IoEntry e;
        e.role = IoRole::Probe;
        e.layer = layer;
        e.offset = offset;
        e.bytes = 64;
        p.host.io.push_back(e);
    };
    probe(0, 0);
    probe(1, 64);
    probe(3, 128);
    IoEntry logits;
    logits.role = IoRole::Logits;
    logits.offset = 192;
    logits.bytes = 64;
    p.host.io.push_back(logits);
    IoEntry ids;
    ids.role = IoRole::Ids;
    ids.offset = 256;
    ids.bytes = 4;
    p.host.io.push_back(ids);
    command(false, 0);  // 0: the embedding
    command(false, 0);  // 1: layer 0's work
    command(true, 0);   // 2: copies layer 0's probe
    command(false, 0);  // 3: layer 1
    command(true, 64);  // 4: copies layer 1's probe
    command(false, 0);  // 5: layers 2 and 3 (2 is not observed)
    command(true, 128); // 6: copies layer 3's probe
    command(false, 0);  // 7: the head
    command(true, 192); // 8: copies the logits
    auto s = sites_of(p);
    CHECK(s.program == digest(p));
    std::vector<std::string> layers, copies;
    for (auto& c : s.commands) {
        layers.push_back(c.layer);
        copies.push_back(c.copies);
    }
    CHECK(layers == std::vector<std::string>{"<=0", "<=0", "0", "1", "1", "2-3", "3", ">3", ">3"});
    CHECK(copies == std::vector<std::string>{"", "", "probe of layer 0", "", "probe of layer 1", "",
                                             "probe of layer 3", "", "logits"});
    CHECK(s.at(9) == nullptr);

    // Without layer probes only the copies are named.
    p.host.io.erase(p.host.io.begin(), p.host.io.begin() + 3);
    auto bare = sites_of(p);
    CHECK(bare.commands[2].layer.empty());
    CHECK(bare.commands[2].copies.empty());
    CHECK(bare.commands[8].copies == "logits");
}

TEST_CASE("sites of a program neither trace ran are refused", "[traces][diff][sites]") {
    auto a = two_steps();
    DiffOptions o;
    o.sites = ProgramSites{0x9999, {}};
    CHECK_THROWS_WITH(diff(a, a, o), Catch::Contains("give the program one of them ran"));
    o.sites = ProgramSites{a.header.program, {{"7", ""}, {"7", "logits"}, {">7", ""}}};
    auto r = diff(a, slowed(a, 4, 10), o);
    REQUIRE(r.durations.size() == 1);
    CHECK(r.durations[0].site.layer == "7"); // command 4 is pc 1 of the second step
    CHECK(r.durations[0].site.copies == "logits");
    CHECK_THAT(to_text(r), Catch::Contains("copies logits"));
}

TEST_CASE("the JSON report parses and holds the text report's values", "[traces][diff][json]") {
    auto a = sample_trace();
    auto b = a;
    b.records[3].end += 340;
    b.records[1].data.at(0).bytes.at(17) ^= 0x10;
    {
        Xxh64 h;
        for (auto& blk : b.records[1].data)
            h.update(blk.bytes);
        b.records[1].digest = h.digest();
    }
    b.header.clock_mhz = 300;
    DiffOptions o;
    o.cycles_tol_pct = 5;
    o.start_tol_pct = 5;
    auto r = diff(a, b, o);
    auto text = to_text(r, "a.trace", "b.trace");
    auto json = boost::json::parse(to_json(r, "a.trace", "b.trace")).as_object();
    CHECK(json.at("format").as_string() == "cardsim-trace-diff");
    CHECK(json.at("agree").as_bool() == r.agree());
    CHECK(text.substr(0, text.find('\n')) == std::string(json.at("verdict").as_string()));
    auto& total = json.at("total").as_object();
    CHECK(total.at("a").as_int64() == static_cast<std::int64_t>(r.total.a));
    CHECK(total.at("b").as_int64() == static_cast<std::int64_t>(r.total.b));
    CHECK_THAT(text, Catch::Contains(fmt::format("total: {} -> {} ({:+}, {:+.2f}%)", total.at("a").as_int64(),
                                                 total.at("b").as_int64(), total.at("delta").as_int64(),
                                                 total.at("pct").as_double())));
    auto& first = json.at("data").at("first").as_object();
    CHECK(first.at("index").as_int64() == 1);
    auto& element = first.at("element").as_object();
    CHECK(element.at("element").as_int64() == 4); // byte 17 is in f32 element 4
    CHECK_THAT(text, Catch::Contains(
                         fmt::format("operand 0 element 4 (f32): A {}", element.at("bits_a").as_string())));
    CHECK_THAT(text, Catch::Contains(fmt::format("vs B {}", element.at("bits_b").as_string())));
    auto& header = json.at("header").as_array();
    REQUIRE(header.size() == 1);
    CHECK(header[0].at("field").as_string() == "clock_mhz");
    CHECK_THAT(text, Catch::Contains("header: clock_mhz: A 331.25 vs B 300"));
    auto& durations = json.at("durations").at("listed").as_array();
    REQUIRE(durations.size() == r.durations.size());
    for (std::size_t k = 0; k < durations.size(); ++k) {
        CHECK(durations[k].at("index").as_int64() == static_cast<std::int64_t>(r.durations[k].index));
        CHECK(durations[k].at("a").as_int64() == static_cast<std::int64_t>(r.durations[k].a));
    }
    CHECK(json.at("positions").at("over").as_int64() == static_cast<std::int64_t>(r.positions.size()));
    CHECK(json.at("units").as_array().size() == r.units.size());
    CHECK(json.at("units").as_array()[0].at("unit").as_string() == r.units[0].unit);
    CHECK(json.at("phases").as_array().size() == r.phases.size());
    CHECK(json.at("notes").as_array().size() == r.notes.size());
}

TEST_CASE("the CSV report has one row per reported value under a fixed header", "[traces][diff][csv]") {
    auto a = two_steps();
    auto b = slowed(a, 1, 50);
    auto r = diff(a, b, DiffOptions{});
    auto csv = to_csv(r, "a,1.trace", "b.trace");
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);
    CHECK(line == "section,item,field,a,b,delta,pct,over,unit,opcode,phase,pc,layer,detail");
    std::vector<std::string> rows;
    while (std::getline(in, line))
        rows.push_back(line);
    REQUIRE(rows.size() >= 3);
    CHECK_THAT(rows[0], Catch::StartsWith("verdict,,,\"a,1.trace\",b.trace,,,1,"));
    CHECK(rows[1] == "total,,cycles,250,300,50,20.0000,1,,,,,,");
    auto duration =
        std::find_if(rows.begin(), rows.end(), [](auto& x) { return x.starts_with("duration,"); });
    REQUIRE(duration != rows.end());
    CHECK(*duration == "duration,1,duration,100,150,50,50.0000,1,matvec,matvec,prefill,1,,");
    CHECK(std::count_if(rows.begin(), rows.end(), [](auto& x) { return x.starts_with("duration,"); }) == 1);
    CHECK(std::count_if(rows.begin(), rows.end(), [](auto& x) { return x.starts_with("unit,"); }) ==
          static_cast<long>(4 * r.units.size()));
}

TEST_CASE("a command slowed by refresh is reported with its ddr.refresh part from the split fields",
          "[traces][diff][waits][split]") {
    auto a = with_splits(sample_trace());
    auto b = a;
    // Command 1 (matvec, 120 to 5400) meets 500 more cycles of refresh in B.
    b.records[1].end += 500;
    (*b.records[1].split)[TimePart::DdrRefresh] += 500;
    REQUIRE(!check_record(b.header, b.records[1], 0));
    auto waits = record_waits(a.records[1]);
    REQUIRE(waits.size() == time_part_count);
    CHECK(waits[0].name == "deps");
    CHECK(waits[6].name == "ddr.refresh");
    CHECK(waits[6].cycles == 1320);
    DiffOptions o;
    o.cycles_tol_pct = 5;
    auto r = diff(a, b, o);
    CHECK(!r.agree());
    REQUIRE(r.durations.size() == 1);
    auto& d = r.durations[0];
    CHECK(d.index == 1);
    std::vector<std::string> moved;
    for (auto& w : d.waits)
        if (w.a != w.b) moved.push_back(w.name + (w.over ? " over" : ""));
    CHECK(moved == std::vector<std::string>{"ddr.refresh over"});
    auto text = to_text(r);
    CHECK_THAT(text, Catch::Contains("waits: ddr.refresh 1320 -> 1820 (+500) over"));
    // The unit's sum moved by the same: the matvec line of the units lists it.
    CHECK_THAT(text, Catch::Contains("waits: ddr.refresh 2570 -> 3070 (+500)"));
    // A version 1 trace has no split: nothing to compare, the durations alone.
    auto plain = diff(sample_trace(), sample_trace(), o);
    CHECK(plain.agree());
    CHECK(record_waits(sample_trace().records[1]).empty());
}
