// The SystemC card on hand-built programs: roofline-bound weight streams, overlap of independent
// commands, the scoreboard, bus errors and load checks. Each case elaborates one card (its own
// process under ctest).

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/program/slots.hpp"
#include "sim/card/simulation.hpp"
#include "sim/units/unit.hpp"

#include <catch2/catch.hpp>

using namespace cardsim;
using namespace cardsim::program;

namespace {

/// A compiled program with `weights` bytes of weights, an arena of `arena` bytes and an io region.
Loaded compiled(std::vector<Command> commands, std::uint64_t weights, std::uint64_t arena = 1 << 16) {
    Loaded c;
    c.program.arena_bytes = arena;
    c.program.regions = {{Region::Weights, Space::Ddr, 0, weights},
                         {Region::Io, Space::Ddr, weights + (1 << 20), 4096},
                         {Region::Arena, Space::Sram, 0, arena}};
    c.program.commands = std::move(commands);
    c.io.positions = Place{Region::Io, 0, 4};
    return c;
}

/// Bytes of a packed `n × k` weight matrix in the default card's format.
std::uint64_t packed(std::uint64_t n, std::uint64_t k) {
    return kernels::matrix_layout(card::default_card_config(), n, k).bytes();
}

Command matvec(std::uint64_t n, std::uint64_t k, std::uint64_t w_offset, std::uint64_t x, std::uint64_t out) {
    Command c;
    c.unit = Unit::Matvec;
    program::fill<program::slots::Matvec>(c,
                                          {.x = {Region::Arena, Access::Read, x, 4 * k},
                                           .w = {Region::Weights, Access::Read, w_offset, packed(n, k)},
                                           .out = {Region::Arena, Access::ReadWrite, out, 4 * n}},
                                          {.rows = 1, .n = n, .k = k, .n1 = n, .n2 = 0});
    return c;
}

Command add(std::uint64_t a, std::uint64_t b, std::uint64_t out, std::uint64_t width) {
    Command c;
    c.unit = Unit::Add;
    program::fill<program::slots::Add>(c,
                                       {.a = {Region::Arena, Access::Read, a, 4 * width},
                                        .b = {Region::Arena, Access::Read, b, 4 * width},
                                        .out = {Region::Arena, Access::Write, out, 4 * width}},
                                       {.rows = 1, .width = width});
    return c;
}

sim::RunPlan timing_plan() {
    sim::RunPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.inputs = [](std::size_t, const sim::StepOutputs*) {
        return sim::StepInputs{{}, {0}, {}, {}, {}, {}, {}, {}};
    };
    return plan;
}

} // namespace

TEST_CASE("a weight stream runs near the DDR roofline and never beats it") {
    auto config = card::default_card_config();
    const std::uint64_t n = 4096, k = 4096, w = packed(n, k); // 16 MiB of int8 codes and their scales
    auto c = compiled({matvec(n, k, 0, 0, 16384)}, w);
    auto r = sim::simulate(config, c, timing_plan());
    REQUIRE_FALSE(r.fault);
    double peak = config.ddr.channels * config.ddr.channel_peak_bytes_per_second();
    double roofline = double(w) / peak;
    INFO("simulated " << r.seconds * 1e6 << " us, roofline " << roofline * 1e6 << " us");
    REQUIRE(r.seconds >= roofline);
    REQUIRE(r.seconds <= roofline / 0.85); // the stream reaches at least 85 % of the peak
    std::uint64_t per_channel = 0;
    for (auto& ch : r.channels) {
        REQUIRE(ch.read_bytes > 0);
        per_channel += ch.read_bytes;
    }
    REQUIRE(per_channel == w);
    REQUIRE(r.records.size() == 1);
    REQUIRE(r.records[0].bytes_read == w + 4 * k + 4 * n); // weights, x, and out (read-write)
}

TEST_CASE("independent commands overlap on different units and a dependency serialises them") {
    auto config = card::default_card_config();
    // A long matvec and an add that shares nothing with it: the add runs while the matvec streams.
    auto m = matvec(2048, 2048, 0, 0, 8192);
    auto a = add(32768, 36864, 40960, 1024);
    auto b = add(40960, 8192, 45056, 1024); // reads the add's and the matvec's outputs
    b.deps = {0, 1};
    auto r = sim::simulate(config, compiled({m, a, b}, packed(2048, 2048)), timing_plan());
    REQUIRE_FALSE(r.fault);
    auto& rm = r.records[0];
    auto& ra = r.records[1];
    auto& rb = r.records[2];
    REQUIRE(ra.start < rm.end); // overlap
    REQUIRE(ra.end < rm.end);
    REQUIRE(rb.start >= rm.end); // waited for both
    REQUIRE(rb.start >= ra.end);
}

TEST_CASE("a unit's time is its closed-form compute cycles when memory is not the limit") {
    auto config = card::default_card_config();
    auto a = add(0, 4096, 8192, 1024);
    auto r = sim::simulate(config, compiled({a}, 64), timing_plan());
    REQUIRE_FALSE(r.fault);
    auto& rec = r.records[0];
    auto spec = config.units[card::UnitKind::Add];
    REQUIRE(rec.compute_cycles == sim::units::compute_cycles(1024, spec.width));
    REQUIRE(rec.compute_cycles == (1024 + spec.width - 1) / spec.width);
    // SRAM reads are latency + ceil(bytes / bytes_per_cycle) cycles; the compute dominates here.
    REQUIRE(rec.end - rec.start >= rec.compute_cycles + spec.latency);
    REQUIRE(rec.end - rec.start <= rec.compute_cycles + spec.latency + 2 * (config.sram.latency + 2) + 2);
}

TEST_CASE("a command for a unit the card lacks stops the run with a bus error naming it") {
    auto config = card::default_card_config();
    Command g;
    g.opcode = Opcode::Gelu;
    g.unit = Unit::Gelu;
    g.operands = {{Region::Arena, Access::Read, 0, 64}, {Region::Arena, Access::Write, 64, 64}};
    g.dims = {1, 16};
    auto r = sim::simulate(config, compiled({add(0, 0, 128, 16), g}, 64), timing_plan());
    REQUIRE(r.fault);
    REQUIRE(r.fault->find("command 1 (Gelu): the card has no gelu unit") != std::string::npos);
}

TEST_CASE("a program whose arena does not fit the SRAM is refused at load with the sizes") {
    auto config = card::default_card_config();
    auto c = compiled({add(0, 0, 64, 16)}, 64, config.sram.bytes + 64);
    REQUIRE_THROWS_WITH(sim::simulate(config, c, timing_plan()),
                        Catch::Contains(std::to_string(config.sram.bytes)));
}

namespace {

/// The cycle the command processor reached record `r`: its start less its waits.
std::uint64_t ready(const sim::CommandRecord& r) {
    return r.start - r.time.waited();
}

} // namespace

TEST_CASE("every command's split sums to its duration, and its waits to its start from when issue reached "
          "it",
          "[stalls]") {
    auto config = card::default_card_config();
    auto m = matvec(2048, 2048, 0, 0, 8192);
    auto m2 = matvec(256, 2048, 2048 * 2048, 0, 16384); // waits for the matvec unit
    auto a = add(32768, 36864, 40960, 1024);
    auto b = add(40960, 8192, 45056, 1024); // waits for both
    b.deps = {0, 2};
    auto plan = timing_plan();
    plan.steps = 2;
    auto r = sim::simulate(config, compiled({m, m2, a, b}, 2048 * 2048 + 256 * 2048), plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.records.size() == 8);
    for (std::size_t k = 0; k < r.records.size(); ++k) {
        auto& rec = r.records[k];
        INFO("step " << rec.step << " command " << rec.index);
        CHECK(rec.time.busy() == rec.end - rec.start);
        REQUIRE(rec.time.waited() <= rec.start);
        CHECK(rec.time[sim::TimePart::Issue] == config.command_processor.issue_cycles);
        CHECK(rec.time[sim::TimePart::Latency] == config.units[rec.unit].latency);
        // In-order issue: the stage reaches a command the cycle it handed over the one before;
        // the first of a step once the previous step ended and the program was fetched.
        if (rec.index > 0)
            CHECK(ready(rec) == r.records[k - 1].start);
        else if (rec.step > 0)
            CHECK(ready(rec) >= r.step_end[rec.step - 1]); // these programs have no region to fetch
    }
}

TEST_CASE("a command whose dependency finishes late waits for it until that end, not for its unit",
          "[stalls]") {
    auto config = card::default_card_config();
    auto m = matvec(2048, 2048, 0, 0, 8192);
    auto b = add(8192, 0, 45056, 1024); // reads the matvec's output
    b.deps = {0};
    auto r = sim::simulate(config, compiled({m, b}, 2048 * 2048), timing_plan());
    REQUIRE_FALSE(r.fault);
    auto& rm = r.records[0];
    auto& rb = r.records[1];
    CHECK(rb.time[sim::TimePart::Deps] == rm.end - ready(rb));
    CHECK(rb.time[sim::TimePart::Deps] > (rm.end - rm.start) / 2);
    CHECK(rb.time[sim::TimePart::Unit] == 0);
    CHECK(rm.time[sim::TimePart::Deps] == 0);
    // The matvec streams 4 MiB of weights: DDR data is what its own time is.
    CHECK(rm.time.largest() == sim::TimePart::DdrData);
}

TEST_CASE("two independent commands on one unit: the second waits for the unit until the first ends",
          "[stalls]") {
    auto config = card::default_card_config();
    REQUIRE(config.units[card::UnitKind::Matvec].count == 1);
    auto m1 = matvec(1024, 2048, 0, 0, 8192);
    auto m2 = matvec(1024, 2048, 1024 * 2048, 0, 16384);
    auto r = sim::simulate(config, compiled({m1, m2}, 2 * 1024 * 2048), timing_plan());
    REQUIRE_FALSE(r.fault);
    auto& r1 = r.records[0];
    auto& r2 = r.records[1];
    CHECK(r2.time[sim::TimePart::Deps] == 0);
    CHECK(r2.time[sim::TimePart::Unit] == r1.end - ready(r2));
    CHECK(r2.time[sim::TimePart::Unit] > 0);
    CHECK(r1.time[sim::TimePart::Unit] == 0);
}

namespace {

/// The one record of an 8 MiB weight stream on the default card with refresh every `trefi` cycles.
sim::CommandRecord stream_with_refresh_every(std::uint32_t trefi) {
    auto config = card::default_card_config();
    config.ddr.timing.trefi = trefi;
    const std::uint64_t n = 2048, k = 4096;
    auto r = sim::simulate(config, compiled({matvec(n, k, 0, 0, 16384)}, n * k), timing_plan());
    REQUIRE_FALSE(r.fault);
    return r.records.at(0);
}

} // namespace

TEST_CASE("a DDR-heavy command under a refresh-tight config stalls on refresh", "[stalls]") {
    const auto trfc = card::default_card_config().ddr.timing.trfc;
    auto rec = stream_with_refresh_every(3 * trfc);
    INFO("refresh " << rec.time[sim::TimePart::DdrRefresh] << " of " << rec.end - rec.start);
    // A rank refreshes a third of the time: the stream's critical part sees a share of that.
    CHECK(rec.time[sim::TimePart::DdrRefresh] * 10 > rec.end - rec.start);
    CHECK(rec.time[sim::TimePart::DdrRefresh] * 2 < rec.end - rec.start);
}

TEST_CASE("a DDR-heavy command with refresh out of the run has no refresh stall", "[stalls]") {
    auto rec = stream_with_refresh_every(1048575);
    CHECK(rec.time[sim::TimePart::DdrRefresh] == 0);
    CHECK(rec.time[sim::TimePart::DdrData] * 2 > rec.end - rec.start);
}
