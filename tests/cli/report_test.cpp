// `cardsim report`, `run --report` and `sweep --report` as a user runs them: pages that are
// well-formed HTML, load nothing from elsewhere, and show the figures the text summary prints.

#include "tests/cli/sweep/support.hpp"
#include "tests/support/html_check.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <regex>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// The summary lines `cardsim run` printed (from `model:` on), as the page shows them: the label
/// and the value with the `: ` between them a space, leading spaces dropped.
std::vector<std::string> summary_as_shown(const std::string& out) {
    std::vector<std::string> shown;
    bool in = false;
    for (auto l : lines(out)) {
        if (l.rfind("model: ", 0) == 0) in = true;
        if (!in) continue;
        l.erase(0, l.find_first_not_of(' '));
        auto colon = l.find(": ");
        REQUIRE(colon != std::string::npos);
        // The host line's outputs and total come after the page was written (it is one of the
        // outputs): the page shows the phases before them.
        if (l.rfind("host: ", 0) == 0) l = l.substr(0, l.find(", outputs "));
        shown.push_back(l.substr(0, colon) + " " + l.substr(colon + 2));
    }
    return shown;
}

} // namespace

TEST_CASE("a multi-sequence run's page shows every line its text summary prints, each sequence's too") {
    cardsim::test::ScratchDir s("report_run_seqs");
    auto m = (s / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 3 -o " + m).code == 0);
    auto r = run_cardsim("run " + m + " --tokens 3 --seqs 3 --prompt 5,6 --trace " +
                         (s / "run.trace").string() + " --report " + (s / "run.html").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto text = visible_text(read(s / "run.html"));
    auto later = run_cardsim("report " + (s / "run.trace").string() + " -o " + (s / "later.html").string());
    REQUIRE(later.code == 0);
    auto text2 = visible_text(read(s / "later.html"));
    auto shown = summary_as_shown(r.out);
    std::size_t sequences = 0;
    for (auto& line : shown) {
        INFO(line);
        CHECK(text.find(line) != std::string::npos);
        if (line.rfind("host ", 0) != 0) CHECK(text2.find(line) != std::string::npos);
        sequences += line.rfind("sequence ", 0) == 0;
    }
    CHECK(sequences == 3);
    CHECK(text2.find("card 6 steps of 3 sequences (18 tokens)") != std::string::npos);
}

TEST_CASE("a run's page shows every line of figures its text summary prints, with the same values") {
    cardsim::test::ScratchDir s("report_run");
    auto m = (s / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 3 -o " + m).code == 0);
    auto r = run_cardsim("run " + m + " --tokens 3 --check-layers 0,1 --trace " + (s / "run.trace").string() +
                         " --report " + (s / "run.html").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto page = read(s / "run.html");
    check_self_contained(page);
    auto text = visible_text(page);
    auto shown = summary_as_shown(r.out);
    REQUIRE(shown.size() >= 12); // model, prompt, generated, card, decode, ddr, 4 channels, units, ...
    std::size_t host = 0;
    for (auto& line : shown) {
        INFO(line);
        CHECK(text.find(line) != std::string::npos);
        host += line.rfind("host ", 0) == 0;
    }
    CHECK(host == 1);
    // A figure the summary did not print is not found: the check can fail.
    CHECK(text.find("card 4 steps in") == std::string::npos);

    // The page made later from the trace shows the same, but the host's wall clock (a trace never
    // records it: two runs of one program give byte-identical traces).
    auto later = run_cardsim("report " + (s / "run.trace").string() + " -o " + (s / "later.html").string());
    INFO(later.out);
    REQUIRE(later.code == 0);
    auto page2 = read(s / "later.html");
    check_self_contained(page2);
    auto text2 = visible_text(page2);
    for (auto& line : shown) {
        INFO(line);
        if (line.rfind("host ", 0) == 0)
            CHECK(text2.find(line) == std::string::npos);
        else
            CHECK(text2.find(line) != std::string::npos);
    }
    // The shim's table and the layer checks are there.
    CHECK(text2.find("verdict: the card runs this model") != std::string::npos);
    CHECK(text2.find("bit-exact at every step") != std::string::npos);
}

TEST_CASE("a report with the program shows each command's operands, and another program is refused") {
    cardsim::test::ScratchDir s("report_program");
    auto m = (s / "m").string(), prog = (s / "p.prog").string(), other = (s / "q.prog").string();
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --seed 1 -o " + m).code == 0);
    REQUIRE(run_cardsim("compile " + m + " -o " + prog).code == 0);
    REQUIRE(run_cardsim("compile " + m + " --knob cache=int8 -o " + other).code == 0);
    auto r = run_cardsim("run " + prog + " --model " + m + " --tokens 2 --timing-only --trace " +
                         (s / "t.trace").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto ok = run_cardsim("report " + (s / "t.trace").string() + " --program " + prog + " -o " +
                          (s / "t.html").string());
    INFO(ok.out);
    REQUIRE(ok.code == 0);
    auto page = read(s / "t.html");
    check_self_contained(page);
    auto disasm = run_cardsim("disasm " + prog);
    REQUIRE(disasm.code == 0);
    auto first_command = lines(disasm.out).back(); // the operands of a command, as disasm prints them
    std::string json_escaped;
    for (char c : first_command)
        if (c == '<')
            json_escaped += "\\u003c";
        else if (c == '"' || c == '\\')
            json_escaped += std::string("\\") + c;
        else
            json_escaped += c;
    CHECK(page.find(json_escaped) != std::string::npos);
    auto bad = run_cardsim("report " + (s / "t.trace").string() + " --program " + other + " -o " +
                           (s / "u.html").string());
    CHECK(bad.code != 0);
    CHECK(contains(bad.out, "q.prog: the program's digest is"));
    CHECK_FALSE(std::filesystem::exists(s / "u.html"));
}

TEST_CASE("report refuses what is neither a trace nor a sweep, naming it") {
    cardsim::test::ScratchDir s("report_bad");
    write(s / "x.trace", "cardsim-trace 1\nprogram 12\n");
    auto r = run_cardsim("report " + (s / "x.trace").string() + " -o " + (s / "x.html").string());
    CHECK(r.code != 0);
    CHECK(contains(r.out, "x.trace:2:"));
    std::filesystem::create_directories(s / "empty");
    r = run_cardsim("report " + (s / "empty").string() + " -o " + (s / "y.html").string());
    CHECK(r.code != 0);
    CHECK(contains(r.out, "is not a trace, a results.csv or a sweep directory"));
    write(s / "other.csv", "a,b\n1,2\n");
    r = run_cardsim("report " + (s / "other.csv").string() + " -o " + (s / "z.html").string());
    CHECK(r.code != 0);
    CHECK(contains(r.out, "other.csv:1: not a sweep's results"));
}

TEST_CASE("a sweep's report that cannot write a point page fails and leaves no page nor points folder") {
    cardsim::test::ScratchDir s("report_sweep_short");
    write(s / "spec.toml", "tokens = 2\nfull = true\nmodels = [\n"
                           "  { generate = { arch = \"dense\", size = \"tiny\", seed = 1 } },\n]\n"
                           "[axes]\nddr.channels = [1, 2]\n");
    auto out = s / "out";
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " --traces -o " + out.string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    // Files over 100 KiB cannot be written (SIGXFSZ ignored): a point's run page (some 300 KB)
    // fails to be written.
    auto rep = shell("trap '' XFSZ; ulimit -f 200; exec " + std::string(CARDSIM_BINARY) + " report " +
                     out.string() + " -o " + (s / "rep.html").string());
    INFO(rep.out);
    CHECK(rep.code == 2);
    CHECK_FALSE(std::filesystem::exists(s / "rep.html"));
    CHECK_FALSE(std::filesystem::exists(s / "rep_points"));
    // Without the limit, the same report is written, a page a point.
    auto ok = run_cardsim("report " + out.string() + " -o " + (s / "rep.html").string());
    CHECK(ok.code == 0);
    CHECK(std::filesystem::is_regular_file(s / "rep_points" / "point-0.html"));
}

TEST_CASE(
    "a sweep's page has its results table, the plot charts, the Pareto fronts and a run page per point") {
    cardsim::test::ScratchDir s("report_sweep");
    write(s / "spec.toml", "tokens = 2\nfull = true\nmodels = [\n"
                           "  { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } },\n"
                           "  { generate = { arch = \"encoder\", size = \"tiny\", seed = 1 } },\n]\n"
                           "[axes]\nddr.channels = [1, 2]\nnumerics.scaling = [\"sub32\", \"per_block\"]\n");
    auto out = s / "out";
    auto r =
        run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 --traces --report -o " + out.string());
    INFO(r.out);
    REQUIRE(r.code == 1); // the encoder points are refused on the default card
    auto page = read(out / "report.html");
    check_self_contained(page);
    auto rows = csv(read(out / "results.csv"));
    REQUIRE(rows.size() == 9);
    const auto status = column(rows[0], "status"), tps = column(rows[0], "tokens_per_second");
    std::size_t ok = 0, refused = 0;
    for (std::size_t i = 1; i < rows.size(); ++i) {
        const auto& id = rows[i][0];
        INFO("point " << id);
        const bool is_ok = rows[i][status] == "ok";
        ok += is_ok;
        // The row is marked, and an ok point links its run page, which shows its tokens/s.
        std::regex row("<tr class=\"status-(ok|refused|failed)[^\"]*\"><td>" + id + "</td>");
        std::smatch m;
        REQUIRE(std::regex_search(page, m, row));
        CHECK(m[1] == (is_ok ? "ok" : "refused"));
        refused += m[1] == "refused";
        if (!is_ok) continue;
        CHECK(contains(page, "<a href=\"report_points/point-" + id + ".html\">"));
        auto point = read(out / "report_points" / ("point-" + id + ".html"));
        check_self_contained(point);
        char want[64];
        std::snprintf(want, sizeof want, "(%.1f tokens/s)", std::stod(rows[i][tps]));
        CHECK(contains(visible_text(point), want));
    }
    CHECK(ok == 4);
    CHECK(refused == 4);
    // Charts as `cardsim plot` draws them: tokens/s and roofline fraction against each axis with
    // two values (model, ddr.channels, numerics.scaling... the model has one value among ok
    // points), and each accuracy figure, DSP blocks and watts against tokens/s.
    std::size_t charts = 0;
    for (auto at = page.find("<svg class=\"chart\""); at != std::string::npos;
         at = page.find("<svg class=\"chart\"", at + 1))
        ++charts;
    CHECK(charts == 2 * 2 + 3 + 2);
    auto text = visible_text(page);
    for (auto title : {"tokens/s (simulated card) against ddr.channels",
                       "roofline fraction (DDR bytes / peak bandwidth / time) against numerics.scaling",
                       "KL(reference || card), nats against tokens/s, Pareto front marked"})
        CHECK(contains(text, title));
    CHECK(contains(text, "Pareto fronts"));
    CHECK(contains(page, "<tr class=\"status-ok front\">"));
    // `cardsim report DIR` writes the same page.
    auto again = run_cardsim("report " + out.string() + " -o " + (s / "again.html").string());
    INFO(again.out);
    REQUIRE(again.code == 0);
    auto page2 = read(s / "again.html");
    check_self_contained(page2);
    CHECK(std::filesystem::exists(s / "again_points" / "point-0.html"));
}

TEST_CASE(
    "a report of two traces is the page of their diff: the totals, units, config keys, data verdict and "
    "text of trace diff") {
    cardsim::test::ScratchDir s("report_diff");
    auto m = (s / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 1 -o " + m).code == 0);
    auto a = (s / "a.trace").string(), b = (s / "b.trace").string(), c = (s / "c.trace").string();
    REQUIRE(run_cardsim("run " + m + " --tokens 3 --trace " + a).code == 0);
    REQUIRE(run_cardsim("run " + m + " --tokens 3 --set ddr.channels=2 --trace " + b).code == 0);
    REQUIRE(run_cardsim("run " + m + " --tokens 3 --knob scaling=sub32 --trace " + c).code == 0);

    auto r = run_cardsim("report " + a + " " + b + " --cycles-tol 5 -o " + (s / "diff.html").string());
    INFO(r.out);
    REQUIRE(r.code == 1); // written, and the verdict is the exit code, as trace diff's
    REQUIRE(contains(r.out, "traces differ: total cycles"));
    auto same = run_cardsim("report " + a + " " + a + " -o " + (s / "same.html").string());
    CHECK(same.code == 0);
    CHECK(contains(same.out, "traces agree"));
    // The diff's options with one input are refused, not ignored.
    auto lone = run_cardsim("report " + a + " --cycles-tol 5 -o " + (s / "lone.html").string());
    CHECK(lone.code == 2);
    CHECK(contains(lone.out, "--cycles-tol is a diff's option"));
    CHECK_FALSE(std::filesystem::exists(s / "lone.html"));
    auto page = read(s / "diff.html");
    check_self_contained(page);
    const auto text = visible_text(page);
    auto json =
        boost::json::parse(run_cardsim("trace diff " + a + " " + b + " --cycles-tol 5 --format json").out);
    // The total, as both sides' cycles.
    const auto& total = json.at("total");
    CHECK(contains(text, fmt::format("{} → {}", total.at("a").as_int64(), total.at("b").as_int64())));
    // Every unit's row: commands and busy cycles on both sides, in the diff's order.
    std::size_t at = text.find(" unit commands A ");
    REQUIRE(at != std::string::npos);
    for (auto& u : json.at("units").as_array()) {
        const auto row = fmt::format(" {} {} {} {} {} ", std::string(u.at("unit").as_string()),
                                     u.at("commands_a").as_int64(), u.at("commands_b").as_int64(),
                                     u.at("busy_a").as_int64(), u.at("busy_b").as_int64());
        INFO(row);
        auto found = text.find(row, at);
        CHECK(found != std::string::npos);
        if (found != std::string::npos) at = found;
    }
    // The config key that differs, by name and both values.
    CHECK(contains(text, "ddr.channels 4 (default) 2"));
    // The text report, as trace diff prints it for the same options.
    auto as_text = run_cardsim("trace diff " + a + " " + b + " --cycles-tol 5");
    REQUIRE(as_text.out.size() > 200);
    CHECK(contains(text, visible_text(as_text.out)));
    CHECK(contains(text, "data: bit-exact"));

    // Another knob point: the data diverges, and the page names the command and element as the
    // text report does.
    auto d = run_cardsim("report " + a + " " + c + " -o " + (s / "data.html").string());
    INFO(d.out);
    REQUIRE(d.code == 1);
    auto data_text = visible_text(read(s / "data.html"));
    auto text_report = run_cardsim("trace diff " + a + " " + c).out;
    auto first = text_report.find("data: first divergence at");
    REQUIRE(first != std::string::npos);
    auto element =
        text_report.substr(first, text_report.find('\n', text_report.find('\n', first) + 1) - first);
    CHECK(contains(data_text, visible_text(element)));

    // Three inputs, or a directory beside a trace, are refused.
    auto three = run_cardsim("report " + a + " " + b + " " + c + " -o " + (s / "x.html").string());
    CHECK(three.code == 2);
    CHECK(contains(three.out, "expected one (a trace or a sweep) or two traces to diff"));
    auto dir = run_cardsim("report " + a + " " + s.path().string() + " -o " + (s / "x.html").string());
    CHECK(dir.code == 2);
    CHECK(contains(dir.out, "is not a trace file"));
    CHECK_FALSE(std::filesystem::exists(s / "x.html"));
}
