// The per-command time split as a value: the proportional share that keeps sums exact, the sums
// per unit and the summary lines `cardsim run` prints from them.

#include "traces/summary.hpp"
#include "traces/time_split.hpp"

#include <catch2/catch.hpp>

#include <numeric>
#include <random>

using namespace cardsim::traces;

TEST_CASE("a proportional share of cycles sums to the cycles exactly and each share is within one of "
          "its exact part",
          "[traces][split]") {
    std::mt19937_64 rng(13);
    for (int round = 0; round < 2000; ++round) {
        std::array<std::uint64_t, 5> w{};
        for (auto& x : w)
            x = rng() % 4 == 0 ? 0 : rng() % 100000;
        const std::uint64_t total = rng() % 50000;
        std::array<std::uint64_t, 5> into{};
        cardsim::sim::share(total, w, into, 2);
        INFO("round " << round);
        CHECK(std::accumulate(into.begin(), into.end(), std::uint64_t{0}) == total);
        const double sum = std::accumulate(w.begin(), w.end(), 0.0);
        for (std::size_t i = 0; i < w.size(); ++i) {
            if (sum == 0) {
                CHECK(into[i] == (i == 2 ? total : 0));
                continue;
            }
            const double exact = double(total) * double(w[i]) / sum;
            CHECK(double(into[i]) >= exact - 1.0);
            CHECK(double(into[i]) <= exact + 1.0);
            if (w[i] == 0) CHECK(into[i] == 0);
        }
    }
}

TEST_CASE("the summary has one line per unit with each nonzero part's share and the largest marked",
          "[traces][split]") {
    TimeByUnit by;
    TimeSplit a, b;
    a[TimePart::Deps] = 30;
    a[TimePart::DdrData] = 50;
    a[TimePart::Latency] = 20;
    b[TimePart::Unit] = 10;
    b[TimePart::Compute] = 90;
    by.add("matvec", a);
    by.add("norm", b);
    by.add("matvec", a);
    REQUIRE(by.units().size() == 2);
    CHECK(by.units()[0].unit == "matvec");
    CHECK(by.units()[0].commands == 2);
    CHECK(by.units()[0].sum.total() == 200);
    auto lines = time_lines(by.units());
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].first == "time in matvec");
    CHECK(
        lines[0].second ==
        "2 commands, 200 cycles from ready to end: deps 30.0 %, ddr.data 50.0 % (the most), latency 20.0 %");
    CHECK(lines[1].second ==
          "1 command, 100 cycles from ready to end: unit 10.0 %, compute 90.0 % (the most)");
}

TEST_CASE("trace show's summary sums the splits per unit and prints their lines", "[traces][split]") {
    Trace t;
    t.header.mode = Mode::TimingOnly;
    for (std::uint64_t i = 0; i < 3; ++i) {
        Record r;
        r.index = i;
        r.unit = i == 1 ? "norm" : "matvec";
        r.opcode = r.unit;
        r.start = 10 * i + 5;
        r.end = r.start + 20;
        if (i != 2) { // the last carries no split and is not counted
            TimeSplit s;
            s[TimePart::Issue] = 5;
            s[TimePart::DdrData] = 15;
            s[TimePart::Latency] = 5;
            r.split = s;
        }
        t.records.push_back(r);
    }
    auto s = summarise(t);
    REQUIRE(s.time.size() == 2);
    CHECK(s.time[0].unit == "matvec");
    CHECK(s.time[0].commands == 1);
    CHECK(s.time[0].sum.total() == 25);
    auto text = to_text(s, t.header, "t.trace");
    CHECK(text.find("\ntime in matvec: 1 command, 25 cycles from ready to end: issue 20.0 %, ddr.data 60.0 % "
                    "(the most), latency 20.0 %\n") != std::string::npos);
    CHECK(text.find("\ntime in norm: 1 command,") != std::string::npos);
}
