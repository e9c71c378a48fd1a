// The sweep report's headline and title: the best tokens/s among the points that fit the chip
// (saying how many do not), and the spec's name as the title, not the directory's.

#include "tests/cli/sweep/support.hpp"
#include "tests/support/html_check.hpp"

#include <fmt/core.h>

#include <regex>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// A results directory `dir` of four points on one axis: `fits` and tokens/s per ok point (the
/// last point an error), and sweep settings naming the spec `name` (none when empty).
void fake_sweep(const std::filesystem::path& dir, const std::vector<std::pair<std::string, double>>& points,
                const std::string& name) {
    std::string csv = "point,model,clock.kernel_mhz,status,tokens_per_second,fits,error\n";
    for (std::size_t i = 0; i < points.size(); ++i)
        csv += fmt::format("{},m,{},ok,{},{},\n", i, 200 + 50 * i, points[i].second, points[i].first);
    csv +=
        fmt::format("{},m,{},error,,,the card refuses the model\n", points.size(), 200 + 50 * points.size());
    write(dir / "results.csv", csv);
    if (!name.empty())
        write(dir / "sweep-settings.txt",
              "# The settings of the sweep\nname=" + name + "\nmode=timing-only\n");
}

/// The visible text of the figure card labelled `label` on `page`.
std::string card_text(const std::string& page, const std::string& label) {
    std::smatch m;
    const std::regex card("<div class=\"card[^\"]*\"><div class=\"label\">" + label +
                          "</div><div class=\"value\">([^<]*)</div><div class=\"note\">([^<]*)</div>");
    REQUIRE(std::regex_search(page, m, card));
    return m[1].str() + " | " + m[2].str();
}

} // namespace

TEST_CASE(
    "the sweep report's best tokens/s is the fastest point that fits the chip, and says how many do not") {
    ScratchDir s("headline-fit");
    // Point 1 is the fastest but does not fit; point 2 is the fastest that does.
    fake_sweep(s / "out", {{"yes", 100.0}, {"no", 500.0}, {"yes", 300.0}, {"no", 450.0}}, "clock-study");
    auto r = run_cardsim("report " + (s / "out").string() + " -o " + (s / "page.html").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    const auto page = read(s / "page.html");
    check_self_contained(page);
    const auto best = card_text(page, "best tokens/s");
    CHECK(best == "300.0 | point 2: 300; among the 2 that fit the chip (2 ok points do not fit)");
    CHECK(card_text(page, "do not fit").starts_with("2 | "));
    // The title is the spec's name, not the directory's.
    CHECK(contains(page, "<h1>Sweep: clock-study</h1>"));
    CHECK(contains(page, "<title>Sweep clock-study — cardsim report</title>"));
    CHECK_FALSE(contains(page, "Sweep: out"));
}

TEST_CASE("a sweep report with no point that fits names no best point, and one without a recorded name "
          "is titled by its directory") {
    ScratchDir s("headline-none");
    fake_sweep(s / "old-dir", {{"no", 100.0}, {"no", 500.0}}, "");
    auto r = run_cardsim("report " + (s / "old-dir").string() + " -o " + (s / "page.html").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    const auto page = read(s / "page.html");
    CHECK(card_text(page, "best tokens/s") == "none | no ok point fits the chip (2 ok points do not fit)");
    CHECK(contains(page, "<h1>Sweep: old-dir</h1>"));
    // Every point fits: the headline says so.
    fake_sweep(s / "all", {{"yes", 100.0}, {"yes", 500.0}}, "all fit");
    REQUIRE(run_cardsim("report " + (s / "all").string() + " -o " + (s / "all.html").string()).code == 0);
    CHECK(card_text(read(s / "all.html"), "best tokens/s") ==
          "500.0 | point 1: 250; every ok point fits the chip");
    CHECK(contains(read(s / "all.html"), "<h1>Sweep: all fit</h1>"));
}

TEST_CASE("a sweep records its spec's name for the report, and a resume by a spec of another name is not "
          "refused for it") {
    ScratchDir s("headline-name");
    write(s / "clock.toml",
          "name = \"kernel clock study\"\n" + tiny_model(2) + "[axes]\nclock.kernel_mhz = [250, 300]\n");
    const auto out = (s / "out").string();
    auto r = run_cardsim("sweep " + (s / "clock.toml").string() + " --report -o " + out);
    INFO(r.out);
    REQUIRE(r.code == 0);
    const auto page = read(s / "out" / "report.html");
    CHECK(contains(page, "<h1>Sweep: kernel clock study</h1>"));
    CHECK(contains(read(s / "out" / "sweep-settings.txt"), "\nname=kernel clock study\n"));
    // The same settings under another name resume; the name recorded is the new one.
    write(s / "renamed.toml", tiny_model(2) + "[axes]\nclock.kernel_mhz = [250, 300]\n");
    auto again = run_cardsim("sweep " + (s / "renamed.toml").string() + " -o " + out);
    INFO(again.out);
    REQUIRE(again.code == 0);
    CHECK(contains(again.out, "2 already in results.csv"));
    CHECK(contains(read(s / "out" / "sweep-settings.txt"), "\nname=renamed\n"));
    // Other settings are still refused, naming the line.
    write(s / "tokens.toml", tiny_model(5) + "[axes]\nclock.kernel_mhz = [250, 300]\n");
    auto other = run_cardsim("sweep " + (s / "tokens.toml").string() + " -o " + out);
    CHECK(other.code == 2);
    CHECK(contains(other.out, "sweep-settings.txt:"));
    CHECK(contains(other.out, "tokens=2"));
}
