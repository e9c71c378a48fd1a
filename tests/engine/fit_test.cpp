// Resources, clock and power of a card config (engine/fit): each unit kind grows as its
// coefficients say with width and count, a config over any budget is refused naming the resource,
// the default card fits, the knobs cost what [fit.knobs] documents, and the digest leaves the
// estimates out.

#include "engine/card/card_config.hpp"
#include "engine/fit/fit.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace cardsim;

namespace {

card::CardConfig with(std::vector<card::Override> sets) {
    return card::load_card_config(std::nullopt, sets);
}

/// Whole blocks of `amount`, as the model rounds.
std::uint64_t blocks(double amount) {
    return amount <= 0 ? 0 : static_cast<std::uint64_t>(std::ceil(amount - 1e-9));
}

bool mentions(const fit::FitReport& r, const std::string& what) {
    for (auto& p : r.problems)
        if (p.find(what) != std::string::npos) return true;
    return false;
}

} // namespace

TEST_CASE(
    "the default card fits the Stratix 10 SX 2800: DSP, ALM and M20K within the chip, Fmax at least its "
    "kernel clock, peak power within the board's") {
    auto config = card::default_card_config();
    auto r = fit::check_fit(config);
    INFO(fit::describe(r, config.fit.device.name));
    // Each budget on its own, from the device's figures in the config (not only the verdict).
    CHECK(r.table.device.dsps == config.fit.device.dsps);
    CHECK(r.table.device.alms == config.fit.device.alms);
    CHECK(r.table.device.m20ks == config.fit.device.m20ks);
    CHECK(r.table.total.dsps <= config.fit.device.dsps);
    CHECK(r.table.total.alms <= config.fit.device.alms);
    CHECK(r.table.total.m20ks <= config.fit.device.m20ks);
    CHECK(r.clock.fmax_mhz >= config.clock.kernel_mhz);
    CHECK(r.peak.total() <= config.fit.device.board_watts);
    CHECK(r.fits());
    CHECK(fit::verdict_line(r).rfind("fit: yes", 0) == 0);
    // The design sweep's default (issue 33) uses the chip: more than half its DSP blocks.
    CHECK(2 * r.table.total.dsps > config.fit.device.dsps);
}

TEST_CASE("every card config shipped in configs/ fits the chip at its own clock") {
    std::vector<std::filesystem::path> files;
    for (auto& e : std::filesystem::directory_iterator(std::filesystem::path(CARDSIM_SOURCE_DIR) / "configs"))
        if (e.path().extension() == ".toml") files.push_back(e.path());
    REQUIRE(files.size() >= 3); // d5005, golden, encoder
    for (auto& f : files) {
        auto config = card::load_card_config(f);
        auto r = fit::check_fit(config);
        INFO(f.string() << "\n" << fit::describe(r, config.fit.device.name));
        CHECK(r.fits());
    }
}

TEST_CASE("each unit kind's resources grow with its width by its per-lane costs and with its count") {
    const auto base = card::default_card_config();
    for (auto kind : card::all_unit_kinds) {
        const std::string k(card::name(kind));
        INFO(k);
        const auto& cost = base.fit[kind];
        for (std::uint32_t width : {16u, 64u, 1024u}) {
            auto c = with({{"units." + k + ".width", std::to_string(width)},
                           {"units." + k + ".count", "1"},
                           {"numerics.scaling", "\"sub32\""}, // the per-lane costs are sub32's
                           {"numerics.attention", "\"vector\""},
                           // the router's keys are read (and may be set) only on a card with experts
                           {"capabilities.experts", kind == card::UnitKind::Router ? "true" : "false"}});
            auto one = fit::unit_resources(c, kind);
            CHECK(one.dsps == blocks(width * cost.dsp_per_lane));
            CHECK(one.alms == blocks(width * cost.alm_per_lane + cost.alm_fixed));
            CHECK(one.m20ks == blocks(cost.m20k_fixed));
            // The router exists only on a card with experts (without, its count reads 0).
            auto three = with({{"units." + k + ".width", std::to_string(width)},
                               {"units." + k + ".count", "3"},
                               {"numerics.scaling", "\"sub32\""},
                               {"capabilities.experts", kind == card::UnitKind::Router ? "true" : "false"}});
            auto table = fit::resources(three);
            bool found = false;
            for (auto& row : table.rows)
                if (row.name == k) {
                    found = true;
                    CHECK(row.count == 3);
                    CHECK(row.resources == fit::Resources{3 * one.dsps, 3 * one.alms, 3 * one.m20ks});
                }
            CHECK(found);
        }
    }
}

TEST_CASE("a kind the card does not have costs nothing, and the total is the sum of the rows") {
    auto c = card::default_card_config();
    auto t = fit::resources(c);
    fit::Resources sum;
    for (auto& row : t.rows) {
        CHECK(row.name != "gelu"); // absent on the default card
        sum += row.resources;
    }
    CHECK(sum == t.total);
    CHECK(t.rows[t.rows.size() - 2].resources.m20ks == fit::arena_m20ks(c));
    CHECK(fit::arena_m20ks(c) == (c.sram.bytes * 8 + 20479) / 20480);
}

TEST_CASE("a config over any budget is refused with a sentence naming the resource and both amounts") {
    auto dsp = fit::check_fit(with({{"units.matvec.width", "16384"}}));
    CHECK_FALSE(dsp.fits());
    CHECK(mentions(dsp, "the card needs " + fit::thousands(dsp.table.total.dsps) +
                            " DSP blocks; the Stratix 10 SX 2800 has 5,760"));
    auto alm = fit::check_fit(with({{"fit.device.shell_alms", "900000"}}));
    CHECK(mentions(alm, "ALMs; the Stratix 10 SX 2800 has 933,120"));
    auto m20k = fit::check_fit(with({{"sram.bytes", "30005760"}}));
    CHECK(mentions(m20k, "M20K blocks; the Stratix 10 SX 2800 has 11,721"));
    auto clock = fit::check_fit(with({{"clock.kernel_mhz", "500"}}));
    CHECK(mentions(clock, "the kernel clock of 500 MHz (clock.kernel_mhz) is above the estimated Fmax"));
    auto power = fit::check_fit(with({{"fit.device.board_watts", "40"}}));
    CHECK(mentions(power, "peak power"));
    CHECK(fit::verdict_line(dsp).rfind("fit: no: the card needs", 0) == 0);
}

TEST_CASE("per-block scaling takes a 27x27 multiplier per product: the matvec's DSP blocks double") {
    auto sub32 = fit::unit_resources(with({{"numerics.scaling", "\"sub32\""}}), card::UnitKind::Matvec);
    auto wide = fit::unit_resources(with({{"numerics.scaling", "\"per_block\""}}), card::UnitKind::Matvec);
    CHECK(wide.dsps == 2 * sub32.dsps);
    CHECK(wide.alms > sub32.alms);
    auto two =
        fit::unit_resources(with({{"numerics.scaling", "\"sub32\""}, {"numerics.activations", "\"two\""}}),
                            card::UnitKind::Matvec);
    CHECK(two.alms == sub32.alms + 3000);
}

TEST_CASE("array attention runs its array width on int8 products, two per DSP block") {
    auto c = with({{"numerics.attention", "\"array\""}});
    CHECK(c.lanes(card::UnitKind::Attention) == c.units.attention.array_width);
    auto r = fit::unit_resources(c, card::UnitKind::Attention);
    CHECK(r.dsps == blocks(c.units.attention.array_width * c.fit.knobs.array_dsp_per_lane));
}

TEST_CASE("the Fmax holds to the knee, falls past it with utilisation, and a shallow reduction limits it") {
    auto base = card::default_card_config();
    const auto& m = base.fit.clock;
    double last = 1e9;
    for (std::uint64_t arena_blocks : {1000u, 4000u, 7000u, 9000u, 10000u}) {
        auto c = with({{"sram.bytes", std::to_string(arena_blocks * 2560)}});
        auto t = fit::resources(c);
        auto e = fit::estimate_clock(c, t);
        INFO(arena_blocks << " arena blocks: " << e.utilisation);
        if (e.utilisation <= m.knee)
            CHECK(e.fmax_mhz == m.base_mhz);
        else
            CHECK(e.fmax_mhz < m.base_mhz);
        CHECK(e.fmax_mhz <= last);
        last = e.fmax_mhz;
    }
    // 512 lanes are 9 adder levels: with 3 stages of one level each the matvec runs at a third.
    auto shallow =
        with({{"units.matvec.width", "512"}, {"units.matvec.latency", "3"}, {"sram.bytes", "2560000"}});
    auto e = fit::estimate_clock(shallow, fit::resources(shallow));
    CHECK(e.fmax_mhz == Approx(m.base_mhz * 3 / 9));
    CHECK(e.limit.find("matvec") != std::string::npos);
}

TEST_CASE("the power is static plus the busy resources at the clock plus the DDR's background and bytes") {
    auto c = card::default_card_config();
    fit::Activity idle;
    auto at_rest = fit::estimate_power(c, 300, idle);
    CHECK(at_rest.dsp_watts == 0);
    CHECK(at_rest.total() == Approx(c.fit.power.static_watts + c.fit.power.shell_watts +
                                    c.ddr.channels * c.fit.power.ddr_background_watts));
    fit::Activity reading;
    reading.ddr_read_bytes_per_second = 10e9;
    CHECK(fit::estimate_power(c, 300, reading).ddr_watts - at_rest.ddr_watts ==
          Approx(10e9 * c.fit.power.ddr_read_pj_per_byte * 1e-12));
    auto peak = fit::peak_activity(c);
    CHECK(fit::estimate_power(c, 400, peak).total() > fit::estimate_power(c, 300, peak).total());
}

TEST_CASE("peak DDR power reads each channel no faster than its user port takes the data") {
    auto c = card::default_card_config();
    const double dram = c.ddr.channels * c.ddr.channel_peak_bytes_per_second();
    CHECK(fit::peak_activity(c).ddr_read_bytes_per_second == Approx(dram)); // the default port keeps up
    auto narrow = with({{"ddr.port_bits", "64"}});
    const double port = narrow.ddr.channels * 64 / 8.0 * narrow.clock.kernel_mhz * 1e6;
    REQUIRE(port < dram);
    CHECK(fit::peak_activity(narrow).ddr_read_bytes_per_second == Approx(port));
    CHECK(fit::estimate_power(narrow, 300, fit::peak_activity(narrow)).ddr_watts <
          fit::estimate_power(c, 300, fit::peak_activity(c)).ddr_watts);
}

TEST_CASE("the config digest leaves the [fit] estimates out and covers what changes a program") {
    auto base = card::digest(card::default_card_config());
    CHECK(card::digest(with({{"fit.power.static_watts", "99"}})) == base);
    CHECK(card::digest(with({{"fit.units.matvec.alm_per_lane", "7"}})) == base);
    CHECK(card::digest(with({{"units.attention.array_width", "96"}})) != base);
    auto text = card::canonical_text(with({{"fit.power.static_watts", "99"}}));
    CHECK(text.find("fit.power.static_watts = 99") != std::string::npos); // still read and written
}
