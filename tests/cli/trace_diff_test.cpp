// `cardsim trace diff` on real runs of a generated hybrid, as a regression reader uses it: the
// summary first, each command reported for its own duration, the data divergence at its element,
// the JSON and CSV reports holding what the text says, and layers from the program.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include "engine/program/program.hpp"
#include "traces/diff.hpp"
#include "traces/reader.hpp"
#include "traces/sites.hpp"
#include "traces/summary.hpp"
#include "traces/writer.hpp"
#include "traces/xxh64.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <filesystem>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using namespace cardsim::traces;

namespace {

/// Generates the tiny hybrid checkpoint in `dir`.
std::string hybrid(const std::filesystem::path& dir) {
    auto m = (dir / "hybrid").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 1 -o " + m).code == 0);
    return m;
}

/// Runs `cardsim run INPUT ARGS --trace TRACE` and returns the trace's path.
std::string traced_run(const std::string& input, const std::filesystem::path& trace,
                       const std::string& args) {
    auto r = run_cardsim("run " + input + " --no-reference --trace " + trace.string() + " " + args);
    INFO(r.out);
    REQUIRE(r.code == 0);
    return trace.string();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

/// The rows of the text report's duration list, each split at spaces.
std::vector<std::vector<std::string>> duration_rows(const std::string& text) {
    auto lines = lines_of(text);
    auto at =
        std::find_if(lines.begin(), lines.end(), [](auto& l) { return l.starts_with("durations over "); });
    std::vector<std::vector<std::string>> rows;
    if (at == lines.end() || ++at == lines.end()) return rows;
    for (++at; at != lines.end(); ++at) { // after the column header
        std::istringstream in(*at);
        std::vector<std::string> fields;
        for (std::string f; in >> f;)
            fields.push_back(f);
        if (fields.empty() || !std::isdigit(static_cast<unsigned char>(fields[0][0]))) break;
        rows.push_back(fields);
    }
    return rows;
}

/// The paired commands (by index) of `a` and `b` whose duration moves by more than `pct` per cent.
/// The paired commands whose duration, or a part of it in their splits, moved by more than `pct`
/// (a part: by more than `pct` of the command's duration in A; the waits before a start do not
/// count, they move with earlier commands).
std::size_t durations_over(const Trace& a, const Trace& b, double pct) {
    auto part_over = [&](const Record& ra, const Record& rb) {
        if (!ra.split || !rb.split) return false;
        for (auto p : time_parts)
            if (!before_start(p)) {
                const auto x = (*ra.split)[p], y = (*rb.split)[p];
                if (double(x > y ? x - y : y - x) * 100.0 > pct * double(ra.duration())) return true;
            }
        return false;
    };
    std::size_t n = 0;
    for (auto& ra : a.records)
        for (auto& rb : b.records)
            if (rb.index == ra.index && (deviates(ra.duration(), rb.duration(), pct) || part_over(ra, rb)))
                ++n;
    return n;
}

std::uint64_t busy_change(const UnitBusy& a, const UnitBusy& b) {
    return a.busy_cycles > b.busy_cycles ? a.busy_cycles - b.busy_cycles : b.busy_cycles - a.busy_cycles;
}

} // namespace

TEST_CASE("with half the DDR channels the summary's first lines give the total change and the dominating "
          "unit and at most ten commands are listed") {
    cardsim::test::ScratchDir scratch_dir("trace_diff_channels");
    const auto& d = scratch_dir.path();
    auto m = hybrid(d);
    auto a = traced_run(m, d / "a.trace", "--tokens 4");
    auto b = traced_run(m, d / "b.trace", "--tokens 4 --set ddr.channels=2");
    auto r = run_cardsim(fmt::format("trace diff {} {} --cycles-tol 5", a, b));
    INFO(r.out);
    REQUIRE(r.code == 1);
    auto ta = read_trace(a), tb = read_trace(b);
    auto sa = summarise(ta), sb = summarise(tb);
    auto lines = lines_of(r.out);
    REQUIRE(lines.size() > 8);
    REQUIRE(sb.cycles > sa.cycles); // half the bandwidth never makes the run faster
    CHECK(lines[0].starts_with("traces differ: "));
    CHECK(contains(lines[0], "total cycles") == deviates(sa.cycles, sb.cycles, 5.0));
    CHECK(lines[2].starts_with(fmt::format("total: {} -> {} (+{}, {}) cycles", sa.cycles, sb.cycles,
                                           sb.cycles - sa.cycles, change(sa.cycles, sb.cycles))));
    // The units, the largest change in busy cycles first: matvec, the unit that streams the weights
    // from DDR, gains the most when the bandwidth halves.
    CHECK(lines[3] == "units, the largest change in busy cycles first:");
    std::string top_unit;
    std::uint64_t top_change = 0;
    for (auto& ua : sa.units)
        for (auto& ub : sb.units)
            if (ua.unit == ub.unit && busy_change(ua, ub) > top_change) {
                top_change = busy_change(ua, ub);
                top_unit = ua.unit;
            }
    CHECK(top_unit == "matvec");
    CHECK(lines[5].starts_with("  " + top_unit + " "));
    CHECK(contains(r.out, "\nconfig: ddr.channels: A 4 (default) vs B 2\n"));
    CHECK(contains(r.out, "\nheader: ddr_channels: A 4 vs B 2\n"));
    // Every paired command over the tolerance is counted; ten are listed.
    auto over = durations_over(ta, tb, 5.0);
    REQUIRE(over > 10);
    CHECK(contains(r.out,
                   fmt::format("\ndurations over 5%: {} commands of {} paired", over, ta.records.size())));
    auto rows = duration_rows(r.out);
    CHECK(rows.size() == 10);
    CHECK(contains(r.out, fmt::format("  ... and {} more (--all lists every one)\n", over - 10)));
    auto all = run_cardsim(fmt::format("trace diff {} {} --cycles-tol 5 --all", a, b));
    CHECK(duration_rows(all.out).size() == over);
    // The per-channel bytes are compared over all channels when the counts differ: none moved.
    CHECK(!contains(r.out, "\nshape: "));
}

TEST_CASE("one slowed command is the only one reported for its duration while every later start moves") {
    cardsim::test::ScratchDir scratch_dir("trace_diff_slowed");
    const auto& d = scratch_dir.path();
    auto m = hybrid(d);
    // Refresh falls at fixed times: a run that shifts moves which commands it lands in. With the
    // longest refresh interval the config allows (0.87 ms) no refresh falls in this 12 us run.
    std::string one_step = "--prompt 5 --tokens 1 --set ddr.timing.trefi=1048575";
    auto a = traced_run(m, d / "a.trace", one_step);
    auto b = traced_run(m, d / "b.trace", one_step + " --set units.embed.latency=200");
    auto r = run_cardsim(fmt::format("trace diff {} {}", a, b));
    INFO(r.out);
    REQUIRE(r.code == 1);
    auto ta = read_trace(a), tb = read_trace(b);
    REQUIRE(ta.records.size() == tb.records.size());
    CHECK(contains(r.out,
                   "\ndurations over 0%: 1 command of " + std::to_string(ta.records.size()) + " paired"));
    auto rows = duration_rows(r.out);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0][0] == "0");
    CHECK(rows[0][3] == "embed/Embed");
    auto embed_a = ta.records[0].duration(), embed_b = tb.records[0].duration();
    CHECK(embed_b - embed_a == 200 - 8); // the latency it was given, less the default's
    CHECK(contains(r.out, "\nconfig: units.embed.latency: A 8 (default) vs B 200\n"));
    // The comparison of every position (--start-tol) sees the cascade: every command that moved.
    std::size_t moved = 0;
    for (std::size_t k = 0; k < ta.records.size(); ++k)
        if (ta.records[k].start != tb.records[k].start || ta.records[k].end != tb.records[k].end) ++moved;
    CHECK(moved > ta.records.size() / 2);
    auto positions = run_cardsim(fmt::format("trace diff {} {} --start-tol 0", a, b));
    CHECK(contains(positions.out, fmt::format("\nstarts or ends over 0%: {} commands", moved)));
    // Within a tolerance above its change (+834%) and the total's, the traces differ only in header
    // (its latency part moved by the same 192 cycles, 834% of its duration in A, too).
    auto loose = run_cardsim(fmt::format("trace diff {} {} --cycles-tol 900", a, b));
    CHECK(loose.code == 1);
    CHECK(lines_of(loose.out)[0] == "traces differ: 2 header mismatches");
    CHECK(contains(loose.out, "waits: latency 8 -> 200 (+192)\n"));
}

TEST_CASE("a flipped bit in a real run's data is found at its exact element with both bit patterns") {
    cardsim::test::ScratchDir scratch_dir("trace_diff_data");
    const auto& d = scratch_dir.path();
    auto m = hybrid(d);
    auto a = traced_run(m, d / "a.trace", "--tokens 2 --trace-data");
    auto ta = read_trace(a);
    auto tb = ta;
    // The 40th command carrying an f32 block of at least 8 elements: flip bit 9 of element 6.
    std::size_t seen = 0, which = 0;
    for (std::size_t k = 0; k < tb.records.size(); ++k) {
        auto& rec = tb.records[k];
        if (!rec.data.empty() && rec.data[0].encoding == Encoding::F32 && rec.data[0].bytes.size() >= 32 &&
            ++seen == 40) {
            which = k;
            break;
        }
    }
    REQUIRE(seen == 40);
    auto& rec = tb.records[which];
    auto bits_a = std::uint32_t(rec.data[0].bytes[24]) | std::uint32_t(rec.data[0].bytes[25]) << 8 |
                  std::uint32_t(rec.data[0].bytes[26]) << 16 | std::uint32_t(rec.data[0].bytes[27]) << 24;
    rec.data[0].bytes[25] ^= 0x02; // bit 9
    Xxh64 h;
    for (auto& blk : rec.data)
        h.update(blk.bytes);
    rec.digest = h.digest();
    write_trace(d / "b.trace", tb);
    auto b = (d / "b.trace").string();
    auto r = run_cardsim(fmt::format("trace diff {} {}", a, b));
    INFO(r.out);
    REQUIRE(r.code == 1);
    CHECK(lines_of(r.out)[0] ==
          fmt::format("traces differ: data diverges at command {} (1 command in all)", rec.index));
    CHECK(contains(r.out, fmt::format("\ndata: first divergence at command {} ({}/{})", rec.index, rec.unit,
                                      rec.opcode)));
    CHECK(contains(r.out, fmt::format("\n  operand 0 element 6 (f32): A 0x{:08x} ({}) vs B 0x{:08x} ({})\n",
                                      bits_a, std::bit_cast<float>(bits_a), bits_a ^ 0x200u,
                                      std::bit_cast<float>(bits_a ^ 0x200u))));
    auto json = boost::json::parse(run_cardsim(fmt::format("trace diff {} {} --format json", a, b)).out);
    auto& element = json.at("data").at("first").at("element");
    CHECK(json.at("data").at("first").at("index").as_int64() == static_cast<std::int64_t>(rec.index));
    CHECK(element.at("element").as_int64() == 6);
    CHECK(element.at("bits_a").as_string() == fmt::format("0x{:08x}", bits_a));
    CHECK(element.at("bits_b").as_string() == fmt::format("0x{:08x}", bits_a ^ 0x200u));
}

TEST_CASE("the JSON report of two real runs parses and matches the text report") {
    cardsim::test::ScratchDir scratch_dir("trace_diff_json");
    const auto& d = scratch_dir.path();
    auto m = hybrid(d);
    auto a = traced_run(m, d / "a.trace", "--tokens 3");
    auto b = traced_run(m, d / "b.trace", "--tokens 3 --set ddr.channels=2");
    auto args = fmt::format("trace diff {} {} --cycles-tol 5 --top 7", a, b);
    auto text = run_cardsim(args);
    auto as_json = run_cardsim(args + " --format json");
    REQUIRE(as_json.code == text.code);
    boost::json::value parsed;
    REQUIRE_NOTHROW(parsed = boost::json::parse(as_json.out));
    auto& j = parsed.as_object();
    auto lines = lines_of(text.out);
    CHECK(std::string(j.at("verdict").as_string()) == lines[0]);
    CHECK(j.at("agree").as_bool() == (text.code == 0));
    auto& total = j.at("total");
    CHECK(lines[2].starts_with(fmt::format("total: {} -> {} ({:+}, {:+.2f}%) cycles",
                                           total.at("a").as_int64(), total.at("b").as_int64(),
                                           total.at("delta").as_int64(), total.at("pct").as_double())));
    // The units in the text's order, with its figures.
    auto& units = j.at("units").as_array();
    for (std::size_t k = 0; k < units.size(); ++k) {
        std::istringstream row(lines.at(5 + k));
        std::string unit;
        std::int64_t commands = 0, busy_a = 0, busy_b = 0;
        row >> unit >> commands >> busy_a >> busy_b;
        CHECK(unit == std::string(units[k].at("unit").as_string()));
        CHECK(busy_a == units[k].at("busy_a").as_int64());
        CHECK(busy_b == units[k].at("busy_b").as_int64());
    }
    // The listed commands in the text's order, with their durations.
    auto rows = duration_rows(text.out);
    auto& listed = j.at("durations").at("listed").as_array();
    REQUIRE(listed.size() == 7);
    REQUIRE(rows.size() == listed.size());
    for (std::size_t k = 0; k < rows.size(); ++k) {
        CHECK(rows[k][0] == std::to_string(listed[k].at("index").as_int64()));
        auto& f = rows[k];
        auto unit_opcode = fmt::format("{}/{}", listed[k].at("unit").as_string().c_str(),
                                       listed[k].at("opcode").as_string().c_str());
        auto at = std::find(f.begin(), f.end(), unit_opcode);
        REQUIRE(at != f.end());
        REQUIRE(f.end() - at >= 3);
        CHECK(*(at + 1) == std::to_string(listed[k].at("a").as_int64()));
        CHECK(*(at + 2) == std::to_string(listed[k].at("b").as_int64()));
    }
    CHECK(contains(text.out,
                   fmt::format("durations over 5%: {} commands", j.at("durations").at("over").as_int64())));
    for (auto& c : j.at("config").as_array())
        CHECK(contains(text.out, fmt::format("config: {}: A {}", c.at("key").as_string().c_str(),
                                             c.at("a").as_string().c_str())));
    // The CSV's total row holds the same values.
    auto csv = run_cardsim(args + " --format csv");
    CHECK(contains(csv.out, fmt::format("\ntotal,,cycles,{},{},{},", total.at("a").as_int64(),
                                        total.at("b").as_int64(), total.at("delta").as_int64())));
}

TEST_CASE("with the program the listed commands carry the layer of its layer probes, and another program is "
          "refused") {
    cardsim::test::ScratchDir scratch_dir("trace_diff_program");
    const auto& d = scratch_dir.path();
    auto m = hybrid(d);
    auto pa = (d / "a.prog").string(), pb = (d / "b.prog").string();
    std::string slow = "--set units.matvec.latency=100";
    REQUIRE(run_cardsim("compile " + m + " -o " + pa + " --check-layers all").code == 0);
    REQUIRE(run_cardsim("compile " + m + " -o " + pb + " --check-layers all " + slow).code == 0);
    auto a = traced_run(pa + " --model " + m, d / "a.trace", "--tokens 2");
    auto b = traced_run(pb + " --model " + m, d / "b.trace", "--tokens 2 " + slow);
    auto r = run_cardsim(fmt::format("trace diff {} {} --program {} --all", a, b, pa));
    INFO(r.out);
    REQUIRE(r.code == 1);
    auto sites = sites_of(cardsim::program::read(pa));
    auto rows = duration_rows(r.out);
    REQUIRE(!rows.empty());
    std::size_t labelled = 0;
    for (auto& f : rows) {
        // index, phase (one or two words), pc, layer, unit/opcode, ...
        std::size_t pc_at = f[1] == "decode" ? 3 : 2;
        REQUIRE(f.size() > pc_at + 2);
        auto* site = sites.at(std::stoull(f[pc_at]));
        REQUIRE(site);
        CHECK(f[pc_at + 1] == site->layer);
        if (!site->layer.empty()) ++labelled;
    }
    CHECK(labelled == rows.size()); // every layer is probed, so every command has a layer
    auto other = run_cardsim(fmt::format("trace diff {} {} --program {}", a, a, pb));
    CHECK(other.code == 2);
    CHECK(contains(other.out, "give the program one of them ran"));
}
