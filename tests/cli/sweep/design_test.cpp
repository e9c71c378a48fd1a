// `cardsim design`: the card's design rule (docs/design.md) over a design sweep's two result sets.
// Each step of the rule decides a hand-made grid; and the default card is the rule's choice on the
// shipped design sweep's grid around it, measured afresh.

#include "engine/card/card_config.hpp"
#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <regex>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// One hand-made point: its axis value (units.matvec.width) and figures.
struct Fake {
    int width;
    bool fits;
    double decode, ttft, serve;
    int dsp, alm = 400000;
    double mhz = 300;
};

/// Writes the run and serve results.csv of `points` under `dir` (run/ and serve/).
void fake_design(const std::filesystem::path& dir, const std::vector<Fake>& points) {
    std::string run = "point,model,units.matvec.width,clock.kernel_mhz,status,tokens_per_second,dsp,alm,fmax_"
                      "mhz,watts,fits,"
                      "prefill_tokens_per_second,ttft_seconds,decode_tokens_per_second,error\n";
    std::string serve = "point,model,units.matvec.width,clock.kernel_mhz,serve.token_budget,status,tokens_"
                        "per_second,dsp,fits,"
                        "tpot_p99_ms,error\n";
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        const auto fits = p.fits ? "yes" : "no";
        const auto axes = std::to_string(p.width) + "," + std::to_string(p.mhz);
        run += std::to_string(i) + ",m," + axes + ",ok," + std::to_string(p.decode) + "," +
               std::to_string(p.dsp) + "," + std::to_string(p.alm) + ",319,80," + fits + "," +
               std::to_string(1024 / p.ttft) + "," + std::to_string(p.ttft) + "," + std::to_string(p.decode) +
               ",\n";
        serve += std::to_string(i) + ",m," + axes + ",16,ok," + std::to_string(p.serve) + "," +
                 std::to_string(p.dsp) + "," + fits + "," + std::to_string(16000 / p.serve) + ",\n";
    }
    write(dir / "run/results.csv", run);
    write(dir / "serve/results.csv", serve);
}

/// `cardsim design` over the fake sweeps of `points`.
Ran design(const ScratchDir& s, const std::vector<Fake>& points) {
    fake_design(s / "d", points);
    return run_cardsim("design " + (s / "d/run").string() + " " + (s / "d/serve").string());
}

/// The `| point | width | ... | rule |` row of point `id` in the table.
std::string row_of(const std::string& out, int id) {
    for (auto& l : lines(out))
        if (l.rfind("| " + std::to_string(id) + " |", 0) == 0) return l;
    return "";
}

/// The `[axes]` of a spec as `path = [v, ...]` lines: each axis' values, as written.
std::vector<std::pair<std::string, std::vector<std::string>>> spec_axes(const std::string& text) {
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    const auto at = text.find("\n[axes]\n");
    REQUIRE(at != std::string::npos);
    const std::regex line(R"(^([a-z_.]+) = \[([^\]]*)\]$)");
    for (auto& l : lines(text.substr(at + 8))) {
        std::smatch m;
        if (!std::regex_match(l, m, line)) continue;
        std::vector<std::string> values;
        std::stringstream in(m[2].str());
        for (std::string v; std::getline(in, v, ',');)
            values.push_back(std::regex_replace(v, std::regex(R"(^\s+|\s+$)"), ""));
        axes.emplace_back(m[1].str(), values);
    }
    return axes;
}

} // namespace

TEST_CASE("the design rule keeps decode within 2 %, then takes the best serving, then TTFT, then the fewest "
          "DSP blocks") {
    ScratchDir s("design-rule");
    // 0: the best decode; 1: 2.5 % slower decode but the best serving (out); 2 and 3: serving within
    // 2 % of the best kept point, 3 with a 5 % longer TTFT (out); 4: tied with 2 on serving and TTFT
    // with fewer DSP blocks (chosen); 5: fastest of all but does not fit.
    auto r = design(s, {{512, true, 10.0, 60.0, 60.0, 2000},
                        {1024, true, 9.75, 20.0, 300.0, 2500},
                        {2048, true, 9.9, 20.0, 200.0, 3500},
                        {2560, true, 9.95, 21.0, 199.0, 3000},
                        {3072, true, 9.9, 20.2, 197.0, 3200},
                        {4096, false, 11.0, 10.0, 400.0, 6000}});
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(row_of(r.out, 0), "| serving -70.0 % |"));
    CHECK(contains(row_of(r.out, 1), "| decode -2.5 % |"));
    CHECK(contains(row_of(r.out, 2), "| more DSP blocks |"));
    CHECK(contains(row_of(r.out, 3), "| TTFT +5.0 % |"));
    CHECK(contains(row_of(r.out, 4), "| chosen |"));
    CHECK(contains(row_of(r.out, 5), "| does not fit |"));
    CHECK(contains(r.out, "chosen: point 4: "));
    CHECK(contains(r.out, "as options: --set units.matvec.width=3072 --set clock.kernel_mhz=300.000000\n"));
}

TEST_CASE(
    "the design rule takes no kernel clock under the DDR's burst rate: a 64 B port a cycle must carry a "
    "channel's 19.2 GB/s") {
    ScratchDir s("design-clock");
    // 1 is better on every figure, at 250 MHz: its 64 B a cycle carry 16 GB/s of a channel's 19.2.
    auto r =
        design(s, {{2560, true, 9.0, 13.0, 170.0, 4500}, {3072, true, 9.1, 12.0, 171.0, 5200, 500000, 250}});
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(row_of(r.out, 1), "| clock under 300 MHz |"));
    CHECK(contains(row_of(r.out, 0), "| chosen |"));
    // The DDR is the config's: at DDR4-2000 the burst rate is 250 MHz, and 1 wins.
    auto slow = run_cardsim("design " + (s / "d/run").string() + " " + (s / "d/serve").string() +
                            " --set ddr.speed_mts=2000");
    INFO(slow.out);
    CHECK(contains(slow.out, "chosen: point 1: "));
}

TEST_CASE("the design rule's tolerances are options: with 3 % of decode the fastest serving point wins, a "
          "tolerance "
          "past 1 is bad input") {
    ScratchDir s("design-tolerance");
    fake_design(s / "d", {{512, true, 10.0, 60.0, 60.0, 2000}, {1024, true, 9.75, 20.0, 300.0, 2500}});
    auto strict = run_cardsim("design " + (s / "d/run").string() + " " + (s / "d/serve").string() +
                              " --decode-tolerance 0.03");
    INFO(strict.out);
    CHECK(strict.code == 0);
    CHECK(contains(strict.out, "chosen: point 1: "));
    auto bad = run_cardsim("design " + (s / "d/run").string() + " " + (s / "d/serve").string() +
                           " --tie-tolerance 1.5");
    CHECK(bad.code == 2);
    CHECK(contains(bad.out, "--tie-tolerance 1.5: expected a fraction in [0, 1)"));
}

TEST_CASE("design: no fitting point is a negative verdict, mismatched or foreign results are bad input") {
    ScratchDir s("design-errors");
    auto none = design(s, {{512, false, 10.0, 60.0, 60.0, 2000}});
    CHECK(none.code == 1);
    CHECK(contains(none.out, "chosen: none (no point fits)"));
    // The serve results of another grid.
    write(s / "other/results.csv",
          "point,model,ddr.channels,status,tokens_per_second,tpot_p99_ms,fits,error\n"
          "0,m,4,ok,10,1,yes,\n");
    auto axes = run_cardsim("design " + (s / "d/run").string() + " " + (s / "other").string());
    CHECK(axes.code == 2);
    CHECK(contains(axes.out, "other/results.csv:1: axes (ddr.channels) differ from those of"));
    // A plain sweep's results as the run side: no prefill columns.
    write(s / "plain/results.csv",
          "point,model,units.matvec.width,clock.kernel_mhz,status,tokens_per_second,error\n"
          "0,m,512,300,ok,10,\n");
    auto plain = run_cardsim("design " + (s / "plain").string() + " " + (s / "d/serve").string());
    CHECK(plain.code == 2);
    CHECK(contains(plain.out, "no column `ttft_seconds`"));
    auto missing = run_cardsim("design " + (s / "nowhere").string() + " " + (s / "d/serve").string());
    CHECK(missing.code == 2);
}

TEST_CASE(
    "the default card is the design rule's choice: no fitting point of the design sweep's grid around it "
    "beats it") {
    // The shipped sweeps (configs/sweeps/design.toml, design_serve.toml) on a reduced grid: the
    // default card's value of each axis and its neighbours in the shipped list, one axis moved at a
    // time, measured afresh and ranked by `cardsim design`.
    const auto defaults = cardsim::card::default_card_config();
    using cardsim::card::UnitKind;
    const auto& matvec = defaults.units[UnitKind::Matvec];
    const std::map<std::string, double> value_of{
        {"units.matvec.count", matvec.count},
        {"units.matvec.width", matvec.width},
        {"units.attention.width", defaults.units[UnitKind::Attention].width},
        {"clock.kernel_mhz", defaults.clock.kernel_mhz}};
    ScratchDir s("design-default");
    const std::string sweeps = std::string(CARDSIM_SOURCE_DIR) + "/configs/sweeps/";
    std::vector<std::string> ran;
    for (std::string name : {"design", "design_serve"}) {
        auto text = read(sweeps + name + ".toml");
        REQUIRE_FALSE(text.empty());
        const auto axes = spec_axes(text);
        REQUIRE(axes.size() == value_of.size());
        std::string reduced = "\n[axes]\n";
        std::vector<std::string> moved; // "path != default" per axis
        for (auto& [path, values] : axes) {
            INFO(path);
            REQUIRE(value_of.count(path) == 1); // a new axis needs its default here
            const double d = value_of.at(path);
            auto at = std::find_if(values.begin(), values.end(), [&](auto& v) { return std::stod(v) == d; });
            REQUIRE(at != values.end()); // the default is a point of the shipped grid
            std::string list = *at;
            if (at != values.begin()) list = *(at - 1) + ", " + list;
            if (at + 1 != values.end()) list += ", " + *(at + 1);
            reduced += path + " = [" + list + "]\n";
            moved.push_back(path + " != " + *at);
        }
        std::string skip = "\nskip_if = [\n";
        for (std::size_t a = 0; a < moved.size(); ++a)
            for (std::size_t b = a + 1; b < moved.size(); ++b)
                skip += "  \"" + moved[a] + " and " + moved[b] + "\",\n";
        const auto head = text.substr(0, text.find("\n[axes]\n"));
        // The star's constraints join the shipped skip_if (an array); the base config is found from
        // the shipped folder.
        REQUIRE(contains(head, "\nskip_if = [\n"));
        auto body = std::regex_replace(head, std::regex(R"(\nskip_if = \[\n)"), skip);
        body = std::regex_replace(body, std::regex(R"re(\nconfig = "([^"]*)")re"),
                                  "\nconfig = \"" + sweeps + "$1\"");
        write(s / (name + ".toml"), body + reduced);
        auto r = run_cardsim("sweep " + (s / (name + ".toml")).string() + " -j 2 -o " + (s / name).string());
        INFO(r.out);
        REQUIRE(r.code == 0);
    }
    auto r = run_cardsim("design " + (s / "design").string() + " " + (s / "design_serve").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex("as options:(.*)\n")));
    std::map<std::string, double> chosen;
    const std::regex set(R"( --set ([a-z_.]+)=([0-9.]+))");
    const std::string options = m[1].str();
    for (auto it = std::sregex_iterator(options.begin(), options.end(), set); it != std::sregex_iterator();
         ++it)
        chosen[(*it)[1].str()] = std::stod((*it)[2].str());
    CHECK(chosen == value_of);
}
