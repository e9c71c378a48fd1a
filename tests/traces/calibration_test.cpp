// Calibration from measured cycles: a synthetic measured trace made with known latencies and widths
// gives them back, the measured commands survive a trace's text, and bad measured entries are named.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "traces/calibration.hpp"
#include "traces/reader.hpp"
#include "traces/writer.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace cardsim;

namespace {

/// A trace of `count` commands on `unit`, each of a random work, measured as latency + ceil(work /
/// width) cycles.
traces::Trace synthetic(const std::string& unit, std::uint32_t latency, std::uint32_t width,
                        std::size_t count, std::mt19937& rng, traces::Trace t = {}) {
    std::uniform_int_distribution<std::uint64_t> work(1000, 200000);
    std::vector<traces::Measured> m = traces::measured_of(t.header);
    const std::uint64_t first = t.records.empty() ? 0 : t.records.back().index + 1;
    for (std::size_t i = 0; i < count; ++i) {
        traces::Record r;
        r.index = first + i;
        r.unit = unit;
        r.opcode = "Op";
        r.digest = 0xef46db3751d8e999; // of no bytes
        const std::uint64_t w = work(rng);
        r.end = traces::model_cycles(w, latency, width);
        t.records.push_back(r);
        m.push_back({r.index, w, r.end});
    }
    t.header.meta[std::string(traces::source_meta)] = "hardware";
    traces::record_measured(t.header, m);
    return t;
}

} // namespace

TEST_CASE("calibration recovers the latency and width a synthetic measured trace was made with") {
    std::mt19937 rng(7);
    auto t = synthetic("matvec", 37, 24, 40, rng);
    t = synthetic("norm", 12, 64, 25, rng, t);
    const auto config = card::default_card_config();
    const auto fits = traces::calibrate(t, config);
    REQUIRE(fits.size() == 2);
    for (const auto& f : fits) {
        const bool matvec = f.kind == card::UnitKind::Matvec;
        CHECK(f.commands == (matvec ? 40u : 25u));
        CHECK(f.spread);
        CHECK(f.latency == (matvec ? 37u : 12u));
        CHECK(f.width == (matvec ? 24u : 64u));
        CHECK(f.after.max == 0.0);
        CHECK(f.config_width == config.lanes(f.kind));
        CHECK(f.before.max > 0.0); // the default card's values are not these
    }
}

TEST_CASE("a trace's measured commands survive its text, with its source") {
    std::mt19937 rng(8);
    auto t = synthetic("matvec", 5, 16, 6, rng);
    t.header.meta[std::string(traces::source_meta)] = "rtl";
    auto back = traces::parse_trace(traces::to_text(t), "measured.trace");
    CHECK(traces::measured_of(back.header) == traces::measured_of(t.header));
    CHECK(traces::source_of(back.header) == traces::Source::Rtl);
    back.header.meta.erase(std::string(traces::source_meta));
    CHECK(traces::source_of(back.header) == traces::Source::Simulated); // absent: simulated
}

TEST_CASE("bad measured entries and sources are named, and a trace without measured commands is refused") {
    traces::Trace t;
    t.header.meta[std::string(traces::measured_meta)] = "1:20:30 4:x:9";
    REQUIRE_THROWS_WITH(traces::measured_of(t.header), Catch::Contains("entry `4:x:9` is malformed"));
    t.header.meta[std::string(traces::measured_meta)] = "3:20:30";
    REQUIRE_THROWS_WITH(traces::calibrate(t, card::default_card_config()),
                        Catch::Contains("names command 3, which the trace has no cmd line for"));
    t.header.meta.erase(std::string(traces::measured_meta));
    REQUIRE_THROWS_WITH(traces::calibrate(t, card::default_card_config()),
                        Catch::Contains("no measured command"));
    t.header.meta[std::string(traces::source_meta)] = "guessed";
    CHECK_FALSE(traces::source_of(t.header));
    CHECK(traces::check_header(t.header)->find("expected simulated, rtl or hardware") != std::string::npos);
}
