// `cardsim calibrate -o OVERLAY`: the overlay holds each fitted width under the key the card reads
// it from, so loading it with --config gives the model the fitted lanes (array attention reads
// `array_width`, every other unit `width`).

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include "engine/card/card_config.hpp"
#include "traces/calibration.hpp"
#include "traces/writer.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <fstream>
#include <random>

using namespace cardsim;

namespace {

/// A measured trace of `count` commands on each of `units` (unit name, latency, width), each
/// command of a random work, measured as latency + ceil(work / width) cycles.
traces::Trace
measured_trace(std::initializer_list<std::tuple<std::string, std::uint32_t, std::uint32_t>> units,
               std::size_t count) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<std::uint64_t> work(1000, 200000);
    traces::Trace t;
    std::vector<traces::Measured> m;
    for (const auto& [unit, latency, width] : units)
        for (std::size_t i = 0; i < count; ++i) {
            traces::Record r;
            r.index = t.records.size();
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

/// Runs `cardsim calibrate` on `t` (with `config_text` as --config when not empty) and loads the
/// overlay it wrote as a card config.
card::CardConfig calibrated(const test::ScratchDir& dir, const traces::Trace& t,
                            const std::string& config_text) {
    traces::write_trace(dir / "m.trace", t);
    std::string config_arg;
    if (!config_text.empty()) {
        std::ofstream(dir / "base.toml") << config_text;
        config_arg = " --config " + (dir / "base.toml").string();
    }
    const auto overlay = dir / "calibrated.toml";
    auto ran = test::run_cardsim(
        fmt::format("calibrate {}{} -o {}", (dir / "m.trace").string(), config_arg, overlay.string()));
    INFO(ran.out);
    REQUIRE(ran.code == 0);
    return card::load_card_config(overlay);
}

} // namespace

TEST_CASE("a calibrated overlay gives array attention its fitted array_width and keeps its width") {
    test::ScratchDir dir("calibrate_array");
    const auto base = card::default_card_config();
    const std::uint32_t fitted_width = 96, fitted_latency = 30;
    REQUIRE(base.units.attention.array_width != fitted_width);
    auto config = calibrated(dir, measured_trace({{"attention", fitted_latency, fitted_width}}, 30),
                             "[numerics]\nattention = \"array\"\n");
    CHECK(config.numerics.attention == numerics::AttentionMath::Array);
    CHECK(config.lanes(card::UnitKind::Attention) == fitted_width);
    CHECK(config.units.attention.array_width == fitted_width);
    CHECK(config.units[card::UnitKind::Attention].width ==
          base.units[card::UnitKind::Attention].width); // vector math's width untouched
    CHECK(config.units[card::UnitKind::Attention].latency == fitted_latency);
}

TEST_CASE("a calibrated overlay gives vector attention and the matvec their fitted width") {
    test::ScratchDir dir("calibrate_vector");
    const auto base = card::default_card_config();
    auto config = calibrated(dir, measured_trace({{"attention", 20, 40}, {"matvec", 9, 24}}, 30), "");
    CHECK(config.numerics.attention == numerics::AttentionMath::Vector);
    CHECK(config.lanes(card::UnitKind::Attention) == 40u);
    CHECK(config.units.attention.array_width == base.units.attention.array_width);
    CHECK(config.units[card::UnitKind::Attention].latency == 20u);
    CHECK(config.lanes(card::UnitKind::Matvec) == 24u);
    CHECK(config.units[card::UnitKind::Matvec].latency == 9u);
}
