// Exports: Perfetto / Chrome trace JSON and CSV carry every command.

#include "engine/io/atomic_file.hpp"
#include "fixtures.hpp"
#include "traces/csv.hpp"
#include "traces/lexical.hpp"
#include "traces/perfetto.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

using namespace cardsim::traces;
namespace io = cardsim::io;
using namespace cardsim::traces::testing;
namespace json = boost::json;

namespace {

/// The events of a serialised Perfetto document, parsed back with Boost.JSON.
json::array parsed_events(const std::string& text) {
    auto doc = json::parse(text);
    REQUIRE(doc.is_object());
    return doc.as_object().at("traceEvents").as_array();
}

/// The lines of `text`.
std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

/// The comma-separated cells of one CSV row.
std::vector<std::string> cells(const std::string& row) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (true) {
        auto comma = row.find(',', at);
        out.push_back(row.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return out;
}

} // namespace

TEST_CASE("the Perfetto file parses and carries one slice per command with its fields", "[traces][export]") {
    ScratchDir dir("traces");
    auto t = sample_trace();
    write_perfetto(dir / "t.json", t);
    auto events = parsed_events(io::read_file(dir / "t.json"));
    std::map<std::uint64_t, json::object> slices;
    for (auto& e : events) {
        auto& o = e.as_object();
        if (o.at("ph").as_string() != "X") continue;
        auto index = o.at("args").as_object().at("index").to_number<std::uint64_t>();
        CHECK(slices.emplace(index, o).second);
    }
    REQUIRE(slices.size() == t.records.size());
    for (auto& r : t.records) {
        INFO("command " << r.index);
        REQUIRE(slices.count(r.index));
        auto& s = slices[r.index];
        CHECK(s.at("name").as_string() == r.opcode);
        CHECK(s.at("ts").to_number<double>() == Approx(static_cast<double>(r.start) / t.header.clock_mhz));
        CHECK(s.at("dur").to_number<double>() ==
              Approx(static_cast<double>(r.duration()) / t.header.clock_mhz));
        auto& args = s.at("args").as_object();
        CHECK(args.at("unit").as_string() == r.unit);
        CHECK(args.at("start_cycle").to_number<std::uint64_t>() == r.start);
        CHECK(args.at("end_cycle").to_number<std::uint64_t>() == r.end);
        CHECK(args.at("bytes_read").to_number<std::uint64_t>() == r.read);
        CHECK(args.at("bytes_written").to_number<std::uint64_t>() == r.written);
        CHECK(args.at("digest").as_string() == hex16(*r.digest));
        CHECK(args.at("ddr_read_written").as_array().size() == 4);
    }
}

TEST_CASE("the Perfetto file has a named track per unit and never overlaps slices on one track",
          "[traces][export]") {
    auto t = sample_trace();
    auto events = parsed_events(to_perfetto(t));
    std::map<std::int64_t, std::string> track_name;
    std::map<std::int64_t, std::vector<std::pair<double, double>>> spans;
    for (auto& e : events) {
        auto& o = e.as_object();
        auto ph = o.at("ph").as_string();
        if (ph == "M" && o.at("name").as_string() == "thread_name")
            track_name[o.at("tid").as_int64()] = o.at("args").as_object().at("name").as_string().c_str();
        if (ph == "X") {
            auto ts = o.at("ts").to_number<double>();
            spans[o.at("tid").as_int64()].emplace_back(ts, ts + o.at("dur").to_number<double>());
            // The slice lies on a track of its unit.
            auto unit = std::string(o.at("cat").as_string().c_str());
            CHECK(track_name.count(o.at("tid").as_int64()));
            CHECK_THAT(track_name[o.at("tid").as_int64()], Catch::StartsWith(unit));
        }
    }
    std::set<std::string> names;
    for (auto& [tid, n] : track_name)
        names.insert(n);
    // Six units; matvec's commands 4 and 8 overlap, so it has a second lane.
    CHECK(names == std::set<std::string>{"dma", "matvec", "matvec #2", "norm", "attention", "argmax", "add"});
    for (auto& [tid, v] : spans) {
        std::sort(v.begin(), v.end());
        for (std::size_t i = 1; i < v.size(); ++i)
            CHECK(v[i].first >= v[i - 1].second);
    }
}

TEST_CASE("the DDR bandwidth counter integrates to the bytes the commands moved", "[traces][export]") {
    for (bool with_ddr : {true, false}) {
        INFO((with_ddr ? "from ddr fields" : "from read + written"));
        auto t = sample_trace();
        if (!with_ddr) t.records[3].ddr.clear(); // one record without: fall back to operand bytes
        double expected_bytes = 0;
        for (auto& r : t.records) {
            if (with_ddr)
                for (auto& c : r.ddr)
                    expected_bytes += static_cast<double>(c.read + c.written);
            else
                expected_bytes += static_cast<double>(r.read + r.written);
        }
        auto events = parsed_events(to_perfetto(t));
        std::vector<std::pair<double, double>> samples; // (ts us, GB/s)
        std::set<std::string> counters;
        for (auto& e : events) {
            auto& o = e.as_object();
            if (o.at("ph").as_string() != "C") continue;
            counters.insert(o.at("name").as_string().c_str());
            if (o.at("name").as_string() == "DDR bandwidth")
                samples.emplace_back(o.at("ts").to_number<double>(),
                                     o.at("args").as_object().at("GB/s").to_number<double>());
        }
        REQUIRE(samples.size() >= 2);
        CHECK(samples.back().second == 0.0);
        double bytes = 0; // GB/s * us = 1e3 bytes
        for (std::size_t i = 0; i + 1 < samples.size(); ++i) {
            CHECK(samples[i].second >= 0.0);
            CHECK(samples[i + 1].first > samples[i].first);
            bytes += samples[i].second * (samples[i + 1].first - samples[i].first) * 1e3;
        }
        CHECK(bytes == Approx(expected_bytes).epsilon(1e-6)); // rates are rounded to 1e-6 GB/s
        CHECK(counters.count("DDR channel 3") == (with_ddr ? 1u : 0u));
    }
}

TEST_CASE("the same trace gives the same Perfetto bytes", "[traces][export]") {
    CHECK(to_perfetto(sample_trace()) == to_perfetto(sample_trace()));
}

TEST_CASE("the Perfetto file keeps a multi-line meta value's lines and escapes only bytes that are not text",
          "[traces][export]") {
    auto t = sample_trace();
    t.header.meta["run.card"] = "clock.kernel_mhz = 300.0\nddr.channels = 4\n";
    auto doc = perfetto_json(t);
    auto& meta = doc.at("otherData").as_object().at("meta").as_object();
    CHECK(meta.at("run.card").as_string() == "clock.kernel_mhz = 300.0\nddr.channels = 4\n");
    CHECK(meta.at("producer").as_string() == "cardsim tests");
    // The note holds a backslash and UTF-8: spelled as the trace file spells it.
    CHECK(meta.at("note").as_string() == escape(t.header.meta.at("note")));
}

TEST_CASE("the CSV has a header row and one row per command in index order", "[traces][export]") {
    ScratchDir dir("traces");
    auto t = sample_trace();
    write_csv(dir / "t.csv", t);
    auto rows = lines(io::read_file(dir / "t.csv"));
    REQUIRE(rows.size() == t.records.size() + 1);
    auto head = cells(rows[0]);
    CHECK(head.size() == 10 + 2 * 4);
    CHECK(head[0] == "index");
    CHECK(head.back() == "ddr3_written");
    for (std::size_t i = 0; i < t.records.size(); ++i) {
        auto& r = t.records[i];
        auto c = cells(rows[i + 1]);
        INFO(rows[i + 1]);
        REQUIRE(c.size() == head.size());
        CHECK(c[0] == std::to_string(r.index));
        CHECK(c[1] == r.unit);
        CHECK(c[2] == r.opcode);
        CHECK(c[5] == std::to_string(r.end - r.start));
        CHECK(c[7] == std::to_string(r.written));
        CHECK(c[8] == hex16(*r.digest));
        CHECK(c[9] == (r.pc ? std::to_string(*r.pc) : ""));
        CHECK(c[10] == std::to_string(r.ddr[0].read));
    }
}

TEST_CASE("the CSV carries each command's ready cycle, what bound it and every part of its split",
          "[traces][export][split]") {
    auto t = with_splits(sample_trace());
    auto rows = lines(to_csv(t));
    REQUIRE(rows.size() == t.records.size() + 1);
    auto head = cells(rows[0]);
    REQUIRE(head.size() == 10 + 2 * 4 + 2 + time_part_count);
    CHECK(head[18] == "ready");
    CHECK(head[19] == "bound_by");
    CHECK(head[20] == "split.deps");
    CHECK(head.back() == "split.latency");
    for (std::size_t i = 0; i < t.records.size(); ++i) {
        auto& r = t.records[i];
        auto c = cells(rows[i + 1]);
        INFO(rows[i + 1]);
        REQUIRE(c.size() == head.size());
        CHECK(c[18] == std::to_string(r.ready()));
        CHECK(c[19] == std::string(name(r.split->largest())));
        std::uint64_t busy = 0;
        for (std::size_t p = 0; p < time_part_count; ++p) {
            CHECK(c[20 + p] == std::to_string(r.split->cycles[p]));
            if (!before_start(time_parts[p])) busy += std::stoull(c[20 + p]);
        }
        CHECK(busy == r.end - r.start);
    }
    // A trace without splits has no such columns (a version 1 trace exports as before).
    CHECK(cells(lines(to_csv(sample_trace()))[0]).size() == 10 + 2 * 4);
}

TEST_CASE("the Perfetto slices carry the split as args and each channel has a queue depth counter",
          "[traces][export][split]") {
    auto t = with_splits(sample_trace());
    auto events = parsed_events(to_perfetto(t));
    std::map<std::uint64_t, json::object> args;
    std::map<std::string, std::vector<std::pair<double, std::int64_t>>> depth; // per counter
    std::set<std::string> counters;
    for (auto& e : events) {
        auto& o = e.as_object();
        if (o.at("ph").as_string() == "X") {
            auto& a = o.at("args").as_object();
            args[a.at("index").to_number<std::uint64_t>()] = a;
        } else if (o.at("ph").as_string() == "C") {
            std::string n(o.at("name").as_string());
            counters.insert(n);
            if (n.ends_with("queue depth"))
                depth[n].emplace_back(o.at("ts").to_number<double>(),
                                      o.at("args").as_object().at("commands").to_number<std::int64_t>());
        }
    }
    for (auto& r : t.records) {
        INFO("command " << r.index);
        auto& a = args.at(r.index);
        CHECK(a.at("ready_cycle").to_number<std::uint64_t>() == r.ready());
        CHECK(a.at("bound_by").as_string() == name(r.split->largest()));
        for (auto p : time_parts)
            CHECK(a.at("split." + std::string(name(p))).to_number<std::uint64_t>() == (*r.split)[p]);
    }
    for (std::uint32_t c = 0; c < 4; ++c) {
        INFO("channel " << c);
        CHECK(counters.count(fmt::format("DDR channel {}", c))); // bandwidth
        auto& d = depth[fmt::format("DDR channel {} queue depth", c)];
        REQUIRE(!d.empty());
        CHECK(d.back().second == 0); // every command ends
        // Each value is the number of commands with bytes on the channel in flight at that time.
        for (auto [ts, n] : d) {
            const auto cycle = static_cast<std::uint64_t>(std::llround(ts * t.header.clock_mhz));
            std::int64_t expected = 0;
            for (auto& r : t.records)
                if (r.ddr[c].read + r.ddr[c].written > 0 && r.start <= cycle &&
                    cycle < std::max(r.end, r.start + 1))
                    ++expected;
            CHECK(n == expected);
        }
    }
}
