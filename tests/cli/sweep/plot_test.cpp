// `cardsim plot`: PNG and SVG charts of a sweep's results through gnuplot, the Pareto front of
// accuracy against throughput, and clear errors.

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// Whether `file` is a PNG image.
bool is_png(const std::filesystem::path& file) {
    return read(file).rfind("\x89PNG\r\n\x1a\n", 0) == 0;
}

/// Whether `file` is a complete SVG document.
bool is_svg(const std::filesystem::path& file) {
    auto t = read(file);
    return contains(t, "<svg") && contains(t, "</svg>");
}

/// The lines of datablock `$name` in a gnuplot script.
std::vector<std::string> datablock(const std::string& script, const std::string& name) {
    std::vector<std::string> out;
    bool in = false;
    for (auto& l : lines(script)) {
        if (l == "$" + name + " << EOD")
            in = true;
        else if (in && l == "EOD")
            break;
        else if (in)
            out.push_back(l);
    }
    return out;
}

/// Runs a sweep of `spec_text` into s/out, then plots it; returns plot's output.
Ran sweep_and_plot(const ScratchDir& s, const std::string& spec_text, int sweep_code = 0) {
    write(s / "spec.toml", spec_text);
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == sweep_code);
    return run_cardsim("plot " + (s / "out").string());
}

} // namespace

TEST_CASE("plot draws tokens/s and roofline fraction against every swept axis as PNG and SVG from the CSV's "
          "numbers") {
    ScratchDir s("sweep-charts");
    auto p = sweep_and_plot(s, tiny_model(2) +
                                   "[axes]\nddr.channels = [1, 2]\nnumerics.cache = [\"f16\", \"int8\"]\n"
                                   "clock.kernel_mhz = [300]\n");
    INFO(p.out);
    REQUIRE(p.code == 0);
    const auto plots = s / "out/plots";
    for (auto fig : {"tokens_per_second", "roofline_fraction"})
        for (auto axis : {"ddr-channels", "numerics-cache"}) {
            const std::string base = std::string(fig) + "_vs_" + axis;
            INFO(base);
            REQUIRE(is_png(plots / (base + ".png")));
            REQUIRE(is_svg(plots / (base + ".svg")));
        }
    // An axis with one value has no chart; a timing-only sweep has no accuracy chart.
    REQUIRE(!std::filesystem::exists(plots / "tokens_per_second_vs_clock-kernel_mhz.png"));
    REQUIRE(!std::filesystem::exists(plots / "kl_vs_tokens_per_second.png"));
    // The chart against ddr.channels has a line per cache format, holding the CSV's tokens/s.
    auto rows = csv(read(s / "out/results.csv"));
    const auto tps = column(rows[0], "tokens_per_second");
    auto script = read(plots / "tokens_per_second_vs_ddr-channels.gp");
    auto f16 = datablock(script, "s0"), int8 = datablock(script, "s1");
    REQUIRE(f16.size() == 2);
    REQUIRE(int8.size() == 2);
    REQUIRE(contains(script, "\"numerics.cache=f16\""));
    // Rows: point 0 = (1, f16), 1 = (1, int8), 2 = (2, f16), 3 = (2, int8).
    REQUIRE(f16[0].rfind("1 " + rows[1][tps] + " ", 0) == 0);
    REQUIRE(f16[1].rfind("2 " + rows[3][tps] + " ", 0) == 0);
    REQUIRE(int8[0].rfind("1 " + rows[2][tps] + " ", 0) == 0);
    REQUIRE(int8[1].rfind("2 " + rows[4][tps] + " ", 0) == 0);
    // Nothing half-written is left behind.
    for (auto& e : std::filesystem::directory_iterator(plots))
        REQUIRE(e.path().filename().string()[0] != '.');
}

TEST_CASE(
    "the accuracy chart marks as Pareto front exactly the points no other point beats on both figures") {
    ScratchDir s("sweep-pareto");
    auto p = sweep_and_plot(s, tiny_model(4) + "full = true\n[axes]\n"
                                               "numerics.scaling = [\"sub32\", \"per_block\"]\n"
                                               "numerics.activations = [\"one\", \"two\"]\n"
                                               "numerics.cache = [\"f16\", \"int8\", \"int8_hadamard\"]\n");
    INFO(p.out);
    REQUIRE(p.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    const auto& h = rows[0];
    const auto tps = column(h, "tokens_per_second");
    for (auto [fig, lower] : {std::pair{"kl", true}, {"max_abs_error", true}, {"top1_agreement", false}}) {
        INFO(fig);
        const auto y = column(h, fig);
        const std::string base = std::string(fig) + "_vs_tokens_per_second";
        REQUIRE(is_png(s / "out/plots" / (base + ".png")));
        REQUIRE(is_svg(s / "out/plots" / (base + ".svg")));
        // The front, computed here from the CSV: beaten when another is no slower and no less
        // accurate, and better on one of the two.
        std::set<std::string> want;
        for (std::size_t i = 1; i < rows.size(); ++i) {
            double xi = std::stod(rows[i][tps]), yi = std::stod(rows[i][y]);
            bool beaten = false;
            for (std::size_t j = 1; j < rows.size(); ++j) {
                double xj = std::stod(rows[j][tps]), yj = std::stod(rows[j][y]);
                bool no_worse = xj >= xi && (lower ? yj <= yi : yj >= yi);
                bool better = xj > xi || (lower ? yj < yi : yj > yi);
                beaten = beaten || (j != i && no_worse && better);
            }
            if (!beaten) want.insert(rows[i][0]);
        }
        REQUIRE(!want.empty());
        auto script = read(s / "out/plots" / (base + ".gp"));
        std::set<std::string> front, others;
        for (auto& l : datablock(script, "front"))
            front.insert(l.substr(l.find("\"#") + 2, l.find(' ', l.find("\"#")) - l.find("\"#") - 2));
        for (auto& l : datablock(script, "points"))
            others.insert(l.substr(l.find("\"#") + 2, l.find('"', l.find("\"#") + 1) - l.find("\"#") - 2));
        REQUIRE(front == want);
        REQUIRE(front.size() + others.size() == rows.size() - 1);
    }
}

TEST_CASE("plot without gnuplot on PATH says to install gnuplot-nox") {
    ScratchDir s("sweep-nognuplot");
    write(s / "out/results.csv",
          "point,model,ddr.channels,status,tokens_per_second,error\n0,m,1,ok,10,\n1,m,2,ok,20,\n");
    auto r = shell("PATH=/nonexistent " + std::string(CARDSIM_BINARY) + " plot " + (s / "out").string());
    REQUIRE(r.code == 2);
    REQUIRE(contains(r.out, "gnuplot"));
    REQUIRE(contains(r.out, "gnuplot-nox"));
    REQUIRE(!std::filesystem::exists(s / "out/plots/tokens_per_second_vs_ddr-channels.png"));
}

TEST_CASE("plot fails rather than leave a chart gnuplot could not write whole") {
    ScratchDir s("sweep-plot-short");
    write(s / "out/results.csv",
          "point,model,ddr.channels,status,tokens_per_second,error\n0,m,1,ok,10,\n1,m,2,ok,20,\n");
    // Files over 8 KiB cannot be written (SIGXFSZ ignored): gnuplot cuts its PNG and SVG short and
    // still exits 0.
    auto r = shell("trap '' XFSZ; ulimit -f 16; exec " + std::string(CARDSIM_BINARY) + " plot " +
                   (s / "out").string());
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(contains(r.out, "short"));
    if (!std::filesystem::exists(s / "out/plots")) return; // the new folder removed with the rest
    for (auto& e : std::filesystem::directory_iterator(s / "out/plots")) {
        const auto ext = e.path().extension();
        INFO(e.path().string());
        CHECK((ext != ".png" && ext != ".svg")); // no chart under its name, whole or cut
        CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
    }
}

TEST_CASE("plot refuses a CSV that is not a sweep's and results without an ok row") {
    ScratchDir s("sweep-badplot");
    write(s / "a/results.csv", "x,y\n1,2\n");
    auto a = run_cardsim("plot " + (s / "a").string());
    REQUIRE(a.code == 2);
    REQUIRE(contains(a.out, "not a sweep's results"));
    write(s / "b/results.csv",
          "point,model,ddr.channels,status,tokens_per_second,error\n0,m,1,error,,refused\n");
    auto b = run_cardsim("plot " + (s / "b").string());
    REQUIRE(b.code == 2);
    REQUIRE(contains(b.out, "no row has status ok"));
    REQUIRE(run_cardsim("plot " + (s / "nowhere").string()).code == 2);
}

TEST_CASE("a sweep's results carry the chip estimates and a point that does not fit is never on a front") {
    ScratchDir s("sweep-fit");
    // 512-lane units (the default card's 2,560 lanes fit once, not twice).
    auto p = sweep_and_plot(s, tiny_model(2) +
                                   "[axes]\nunits.matvec.width = [512]\nunits.matvec.count = [1, 2, 16]\n");
    INFO(p.out);
    REQUIRE(p.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    const auto& h = rows[0];
    for (auto c : {"dsp", "alm", "m20k", "fmax_mhz", "watts", "tokens_per_joule", "fits"})
        REQUIRE(column(h, c) < h.size());
    const auto fits = column(h, "fits"), dsp = column(h, "dsp"), tps = column(h, "tokens_per_second");
    // Sixteen matvec units overrun the device (cardsim fit refuses them); one and two fit, and
    // more units cost more DSP blocks.
    REQUIRE(rows[1][fits] == "yes");
    REQUIRE(rows[2][fits] == "yes");
    REQUIRE(rows[3][fits] == "no");
    REQUIRE(std::stod(rows[1][dsp]) < std::stod(rows[2][dsp]));
    REQUIRE(std::stod(rows[2][dsp]) < std::stod(rows[3][dsp]));
    REQUIRE(std::stod(rows[3][tps]) >= std::stod(rows[2][tps]));
    for (auto fig : {"dsp", "watts"}) {
        INFO(fig);
        const std::string base = std::string(fig) + "_vs_tokens_per_second";
        REQUIRE(is_png(s / "out/plots" / (base + ".png")));
        auto script = read(s / "out/plots" / (base + ".gp"));
        auto front = datablock(script, "front"), misfit = datablock(script, "misfit");
        REQUIRE(misfit.size() == 1);
        REQUIRE(misfit[0].rfind(rows[3][tps] + " ", 0) == 0);
        for (auto& l : front)
            REQUIRE(!contains(l, "\"#2 "));
        REQUIRE(!front.empty());
    }
    // The charts against the axis ring the point too.
    auto axis = read(s / "out/plots/tokens_per_second_vs_units-matvec-count.gp");
    REQUIRE(datablock(axis, "misfit").size() == 1);
    REQUIRE(contains(axis, "does not fit the chip"));
}

TEST_CASE("the front of a figure is taken over the fitting points only") {
    ScratchDir s("sweep-front-fits");
    // Point 2 is fastest and cheapest but does not fit: without it, 0 and 1 form the front.
    write(s / "out/results.csv",
          "point,model,units.matvec.count,status,tokens_per_second,dsp,watts,fits,error\n"
          "0,m,1,ok,10,100,50,yes,\n1,m,2,ok,20,200,60,yes,\n"
          "2,m,3,ok,30,50,40,no,\n3,m,4,ok,15,300,70,yes,\n");
    auto p = run_cardsim("plot " + (s / "out").string());
    INFO(p.out);
    REQUIRE(p.code == 0);
    auto script = read(s / "out/plots/dsp_vs_tokens_per_second.gp");
    auto front = datablock(script, "front");
    REQUIRE(front.size() == 2);
    REQUIRE(front[0].rfind("10 100 ", 0) == 0);
    REQUIRE(front[1].rfind("20 200 ", 0) == 0);
    REQUIRE(datablock(script, "misfit") == std::vector<std::string>{"30 50 \"#2\""});
    REQUIRE(datablock(script, "points").size() == 1); // point 3, beaten by point 1
}
