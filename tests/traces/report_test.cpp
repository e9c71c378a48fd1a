// The report pages of traces/report: well-formed, self-contained HTML; the run facts a trace's meta
// records read back as they were; the timeline's columns are the CSV export's; time views that
// add up to the trace.

#include "engine/error.hpp"
#include "tests/support/html_check.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/traces/fixtures.hpp"
#include "traces/csv.hpp"
#include "traces/reader.hpp"
#include "traces/report/html.hpp"
#include "traces/report/run_facts.hpp"
#include "traces/report/run_page.hpp"
#include "traces/report/svg_chart.hpp"
#include "traces/report/timeline.hpp"
#include "traces/writer.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <regex>

using namespace cardsim::traces;
using namespace cardsim::traces::report;
using cardsim::test::external_references;
using cardsim::test::html_problems;
using cardsim::test::visible_text;

namespace {

/// Facts of a made-up run of the sample trace, every field set.
RunFacts sample_facts() {
    RunFacts f;
    f.model = "hybrid decoder (qwen3_5) <test> & co";
    f.program = "build/x.prog";
    f.prompt = {1, 17, 42, 7};
    f.generated = {8, 39};
    f.steps = 5;
    f.prefill_steps = 4;
    f.cycles = 9500;
    f.seconds = 9500 / 331.25e6;
    f.step_end = {1000, 2000, 3000, 4000, 9500};
    f.ddr_bytes = 3'200'123;
    f.peak_bytes_per_second = 76.8e9;
    f.arena_bytes = 896;
    f.channels = {{800'000, 1'000, 4493, 88, 3},
                  {790'000, 0, 3601, 87, 0},
                  {805'000, 0, 2558, 86, 1},
                  {804'123, 0, 2390, 85, 2}};
    f.unit_busy = {{"card.matvec_0", 8000}, {"card.norm_0", 200}, {"card.idle_0", 0}};
    f.watts = 54.875;
    f.fit = "fit: yes (1,920 of 5,760 DSP blocks; Fmax ~319 MHz for 300 MHz)";
    f.bit_exact = false;
    f.mismatch =
        "step 3, layer 1 output (hidden), element 5: card 0x3f800000 (1), golden 0x3f800001 (1.0000001)";
    f.mismatch_step = 3;
    f.mismatch_layer = 1;
    f.layers_checked = {0, 1};
    f.accuracy = AccuracyFacts{2, 3.7123, 0.5, 0.40812};
    f.card = "clock.kernel_mhz = 331.25\nddr.channels = 4\nunits.matvec.count = 1\n";
    f.verdicts = Verdicts{{{"mixer", "0-2", "native", "merged_qkv", "3 Gemm", "Matvec", 3},
                           {"head", "", "refused", "softcap", "Softcap", "-", 1}},
                          {"glu_act_mul: the engine gates an attention's result by a sigmoid only (×4)"},
                          {"head: the engine has no unit for soft caps"},
                          "verdict: the card refuses this model (1 refusal)"};
    return f;
}

std::string page_of(const Trace& t, std::optional<RunFacts> facts) {
    return run_page({t, std::move(facts), "sample.trace", {}});
}

} // namespace

TEST_CASE("a run page is well-formed HTML that loads nothing from elsewhere", "[traces][report]") {
    auto t = testing::sample_trace();
    for (bool with_facts : {true, false}) {
        INFO("with facts: " << with_facts);
        cardsim::test::check_self_contained(
            page_of(t, with_facts ? std::optional(sample_facts()) : std::nullopt));
    }
}

TEST_CASE("a trace without commands gives a well-formed page", "[traces][report]") {
    Trace t;
    t.header.ddr_channels = 2;
    auto page = page_of(t, std::nullopt);
    CHECK(html_problems(page).empty());
    CHECK(visible_text(page).find("0 commands in 0 cycles") != std::string::npos);
}

TEST_CASE("the well-formedness check rejects broken pages", "[traces][report]") {
    auto good = document("t", "<p>x</p>");
    REQUIRE(html_problems(good).empty());
    for (std::string bad :
         {"<p>x", "<p>x</div>", "<p class=x>y</p>", "<p>a & b</p>", "<div id=\"a\"></div><p id=\"a\"></p>",
          "<div/>", "<p title=\"a\" title=\"b\">y</p>"}) {
        INFO(bad);
        CHECK_FALSE(html_problems(document("t", bad)).empty());
    }
    CHECK_FALSE(external_references(document("t", "<img alt=\"\" src=\"x.png\">")).empty());
    CHECK_FALSE(external_references(document("t", "<a href=\"https://example.org\">x</a>")).empty());
}

TEST_CASE("the page shows every summary line of the run's facts and escapes text", "[traces][report]") {
    auto t = testing::sample_trace();
    auto facts = sample_facts();
    auto page = page_of(t, facts);
    auto text = visible_text(page);
    auto lines = summary_lines({t, facts, "", {}});
    REQUIRE(lines.size() > 10);
    for (auto& [label, value] : lines) {
        INFO(label << ": " << value);
        CHECK(text.find(value) != std::string::npos);
    }
    CHECK(page.find("<test> & co") == std::string::npos);
    CHECK(page.find("&lt;test&gt; &amp; co") != std::string::npos);
    // The figures as `cardsim run` formats them.
    CHECK(text.find("5 steps in 9500 cycles, 0.029 ms simulated (174342.1 tokens/s)") != std::string::npos);
    CHECK(text.find("channel 3") != std::string::npos);
    CHECK(text.find("power 54.9 W on average (estimate), 3.18e+03 tokens per joule") != std::string::npos);
    CHECK(text.find("fit yes (1,920 of 5,760 DSP blocks") != std::string::npos);
    CHECK(text.find("top-1 agreement 50.0 %, KL 0.408 nats") != std::string::npos);
    CHECK(text.find("bit-exact: NO") == std::string::npos); // the label is its own cell
    CHECK(text.find("NO: step 3, layer 1 output") != std::string::npos);
    CHECK(text.find("card.idle_0") == std::string::npos); // units never busy are left out, as in the text
    // The verdicts and layer checks.
    CHECK(text.find("merged_qkv") != std::string::npos);
    CHECK(text.find("head: the engine has no unit for soft caps") != std::string::npos);
    CHECK(text.find("first difference at step 3") != std::string::npos);
}

TEST_CASE("a page of a trace without run facts shows what the records give", "[traces][report]") {
    auto t = testing::sample_trace();
    auto text = visible_text(page_of(t, std::nullopt));
    CHECK(text.find("not recorded") != std::string::npos);
    CHECK(text.find("8 commands in 9500 cycles, 0.029 ms at 331.25 MHz") != std::string::npos);
}

TEST_CASE("run facts recorded in a trace's meta read back equal, without the host times",
          "[traces][report]") {
    cardsim::test::ScratchDir dir("report_facts");
    auto t = testing::sample_trace();
    auto facts = sample_facts();
    facts.host = HostFacts{1.5, 0.25, 1.25, 0.5, 0.75, std::nullopt, std::nullopt};
    record(facts, t.header.meta);
    write_trace(dir / "run.trace", t);
    auto back = read_trace(dir / "run.trace");
    auto got = recorded(back.header, "run.trace");
    REQUIRE(got);
    CHECK_FALSE(got->host);
    facts.host.reset();
    CHECK(*got == facts);
    CHECK(back.header.meta.at("producer") == "cardsim tests"); // other meta stays
    CHECK_FALSE(recorded(testing::sample_trace().header, "x"));
}

TEST_CASE("a multi-sequence run's facts read back equal, each sequence's tokens too", "[traces][report]") {
    cardsim::test::ScratchDir dir("report_facts_seqs");
    auto t = testing::sample_trace();
    auto facts = sample_facts();
    facts.seqs = 2;
    facts.sequences = {{{1, 17, 42, 7}, {8, 39}}, {{102, 118}, {5, 6, 7, 8}}};
    record(facts, t.header.meta);
    write_trace(dir / "run.trace", t);
    auto got = recorded(read_trace(dir / "run.trace").header, "run.trace");
    REQUIRE(got);
    CHECK(*got == facts);
    CHECK(got->sequences[1].second.size() == 4);
}

TEST_CASE("a damaged run summary is an error naming the trace and the key", "[traces][report]") {
    auto t = testing::sample_trace();
    record(sample_facts(), t.header.meta);
    auto broken = t.header;
    broken.meta["run.summary"] = "{\"steps\": 5";
    CHECK_THROWS_WITH(recorded(broken, "run.trace"),
                      Catch::Contains("run.trace: meta run.summary: not JSON"));
    auto summary = boost::json::parse(t.header.meta["run.summary"]).as_object();
    summary["cycles"] = -3;
    broken.meta["run.summary"] = boost::json::serialize(summary);
    CHECK_THROWS_WITH(recorded(broken, "run.trace"), Catch::Contains("`cycles` is not an unsigned integer"));
    summary.erase("cycles");
    broken.meta["run.summary"] = boost::json::serialize(summary);
    CHECK_THROWS_WITH(recorded(broken, "run.trace"), Catch::Contains("the field `cycles` is missing"));
    broken = t.header;
    broken.meta["run.shim"] = "[]";
    CHECK_THROWS_WITH(recorded(broken, "run.trace"),
                      Catch::Contains("meta run.shim: the value is not a JSON object"));
}

TEST_CASE("the timeline's columns are the CSV export's columns, cell for cell", "[traces][report]") {
    auto t = testing::sample_trace();
    auto cols = command_columns(t);
    const auto csv = to_csv(t);
    auto header = csv.substr(0, csv.find('\n'));
    std::string names;
    for (auto& c : cols)
        names.append(names.empty() ? "" : ",").append(c.as_object().at("name").as_string());
    CHECK(names == header); // a column the export gains shows in the tooltips as it is
    // Numbers stay numbers, text is coded by its distinct values.
    auto column = [&](std::string_view name) -> const boost::json::object& {
        for (auto& c : cols)
            if (c.as_object().at("name").as_string() == name) return c.as_object();
        FAIL("no column " << name);
        throw;
    };
    auto& start = column("start").at("values").as_array();
    REQUIRE(start.size() == t.records.size());
    for (std::size_t i = 0; i < t.records.size(); ++i)
        CHECK(start[i].as_uint64() == t.records[i].start);
    auto& unit = column("unit");
    for (std::size_t i = 0; i < t.records.size(); ++i)
        CHECK(unit.at("names").as_array()[unit.at("codes").as_array()[i].as_uint64()].as_string() ==
              t.records[i].unit);
    CHECK(column("pc").at("values").as_array()[0].is_null()); // an empty cell
}

TEST_CASE("JSON inside a script element never closes it and reads back the same", "[traces][report]") {
    boost::json::value v = {{"text", "</script><!-- <b>"}, {"n", 3}};
    auto s = script_json(v);
    CHECK(s.find('<') == std::string::npos);
    CHECK(boost::json::parse(s) == v);
}

TEST_CASE("occupancy cells shade a unit by the fraction of the cell it was busy", "[traces][report]") {
    Trace t;
    t.header.clock_mhz = 100;
    t.records.push_back({.index = 0, .unit = "a", .opcode = "x", .start = 0, .end = 1000});
    t.records.push_back({.index = 1, .unit = "b", .opcode = "y", .start = 0, .end = 500});
    t.records.push_back({.index = 2, .unit = "b", .opcode = "y", .start = 250, .end = 500}); // overlaps: once
    auto svg = occupancy_svg(t, 4);
    CHECK(svg.find("a: busy 100.0 % of the run") != std::string::npos);
    CHECK(svg.find("b: busy 50.0 % of the run") != std::string::npos);
    // a: one band over all 4 cells; b: one band over the first 2, nothing after.
    std::regex band("class=\"busy\" data-tip=\"([ab])\n([0-9.]+) µs to ([0-9.]+) µs\nbusy ([0-9]+) %\"");
    std::vector<std::string> found;
    for (std::sregex_iterator it(svg.begin(), svg.end(), band), end; it != end; ++it)
        found.push_back((*it)[1].str() + " " + (*it)[2].str() + "-" + (*it)[3].str() + " " + (*it)[4].str());
    CHECK(found == std::vector<std::string>{"a 0.00-10.00 100", "b 0.00-5.00 100"});
}

TEST_CASE("the bandwidth chart integrates to the bytes each channel moved", "[traces][report]") {
    auto t = testing::sample_trace();
    const int bins = 50;
    auto chart = bandwidth_chart(t, bins);
    REQUIRE(chart.series.size() == 4);
    const double cell_seconds = double(run_cycles(t)) / bins / (t.header.clock_mhz * 1e6);
    for (std::size_t c = 0; c < 4; ++c) {
        double bytes = 0, want = 0;
        for (auto& p : chart.series[c].points)
            bytes += p.y * 1e9 * cell_seconds;
        for (auto& r : t.records)
            want += double(r.ddr[c].read + r.ddr[c].written);
        CHECK(bytes == Approx(want).epsilon(1e-9));
    }
}

TEST_CASE("a log chart leaves out values it cannot draw and ticks whole decades", "[traces][report]") {
    Chart c;
    c.title = "t";
    c.log_y = true;
    c.series.push_back({"s", {{1, 0.002, "", "a"}, {2, 0, "", "zero"}, {3, 40, "", "b"}}});
    auto svg = report::svg(c);
    CHECK(svg.find("data-tip=\"zero\"") == std::string::npos);
    CHECK(svg.find("data-tip=\"a\"") != std::string::npos);
    for (auto tick : {">0.001<", ">0.01<", ">0.1<", ">1<", ">10<", ">100<"})
        CHECK(svg.find(tick) != std::string::npos);
    auto ticks = nice_ticks(0, 1, 5);
    REQUIRE(ticks.size() == 6);
    CHECK(ticks.front() == 0);
    CHECK(ticks[1] == Approx(0.2));
    CHECK(ticks.back() == Approx(1));
}
