// Every unit's compute cycles for a range of shapes are the closed form of its documented measure
// (configs/d5005.toml: MACs for the matvec, cache elements for attention, channels for the conv,
// state elements for the delta step, elements for the rest) over its configured width, and a
// command never finishes before its compute cycles plus its pipeline latency.

#include "engine/card/card_config.hpp"
#include "engine/kernels/formats.hpp"
#include "sim/card/simulation.hpp"

#include <catch2/catch.hpp>

using namespace cardsim;
using namespace cardsim::program;

namespace {

/// An arena operand of `bytes` at `at` (the program's one arena is big enough for all of them).
Operand arena(Access a, std::uint64_t at, std::uint64_t bytes) {
    return {Region::Arena, a, at, bytes};
}

struct Case {
    Command command;
    std::uint64_t work; ///< computed here by hand from the shape
};

} // namespace

TEST_CASE("each unit's compute cycles are its work over its width for a range of shapes") {
    auto config = card::default_card_config();
    std::vector<Case> cases;
    for (std::uint64_t width : {16u, 100u, 4096u}) {
        Command add;
        add.opcode = Opcode::Add;
        add.unit = Unit::Add;
        add.operands = {arena(Access::Read, 0, 4 * width), arena(Access::Read, 0, 4 * width),
                        arena(Access::Write, 1 << 20, 4 * width)};
        add.dims = {1, width};
        cases.push_back({add, width});
        Command norm;
        norm.opcode = Opcode::RmsNorm;
        norm.unit = Unit::Norm;
        norm.operands = {arena(Access::Read, 0, 8 * width), {}, arena(Access::Write, 1 << 21, 8 * width)};
        norm.dims = {2, width, width};
        norm.params = {f64_bits(1e-6)};
        cases.push_back({norm, 2 * width});
    }
    for (std::uint64_t n : {64u, 512u}) {
        Command mv;
        mv.opcode = Opcode::Matvec;
        mv.unit = Unit::Matvec;
        const std::uint64_t k = 256;
        mv.operands = {arena(Access::Read, 0, 4 * k),
                       {Region::Weights, Access::Read, 0, kernels::matrix_layout(config, n, k).bytes()},
                       {},
                       arena(Access::ReadWrite, 1 << 22, 4 * n),
                       {},
                       {}};
        mv.dims = {1, n, k, n, 0};
        cases.push_back({mv, n * k});
    }
    for (std::uint64_t channels : {64u, 1000u}) {
        Command conv;
        conv.opcode = Opcode::Conv;
        conv.unit = Unit::Conv;
        conv.operands = {arena(Access::Read, 0, 4 * channels),
                         {Region::Weights, Access::Read, 0, 16 * channels},
                         arena(Access::ReadWrite, 1 << 23, 12 * channels),
                         arena(Access::Write, (1 << 23) + (1 << 21), 4 * channels),
                         {},
                         {}}; // no slots (nor their positions)
        conv.dims = {1, channels, 4};
        cases.push_back({conv, channels});
    }
    {
        Command delta;
        delta.opcode = Opcode::DeltaStep;
        delta.unit = Unit::Delta;
        const std::uint64_t kh = 2, vh = 4, dk = 32, dv = 48;
        delta.operands = {arena(Access::Read, 0, 4 * kh * dk),
                          arena(Access::Read, 0, 4 * kh * dk),
                          arena(Access::Read, 0, 4 * vh * dv),
                          arena(Access::Read, 0, 4 * vh),
                          arena(Access::Read, 0, 4 * vh),
                          arena(Access::ReadWrite, (1 << 23) + (1 << 22), 4 * vh * dk * dv),
                          arena(Access::Write, 1 << 23, 4 * vh * dv),
                          {},
                          {}}; // no slots (nor their positions)
        delta.dims = {1, kh, vh, dk, dv};
        cases.push_back({delta, vh * dk * dv});
    }
    Loaded c;
    c.program.arena_bytes = 1 << 24;
    c.program.regions = {{Region::Weights, Space::Ddr, 0, 1 << 20},
                         {Region::Io, Space::Ddr, 1 << 21, 4096},
                         {Region::Arena, Space::Sram, 0, 1 << 24}};
    // The cases share arena bytes (several write the same place): each waits for the one before,
    // or the card's hazard check would stop the run on the race.
    for (auto& k : cases) {
        if (!c.program.commands.empty())
            k.command.deps = {static_cast<std::uint32_t>(c.program.commands.size() - 1)};
        c.program.commands.push_back(k.command);
    }
    sim::RunPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.inputs = [](std::size_t, const sim::StepOutputs*) {
        return sim::StepInputs{{}, {0}, {}, {}, {}, {}, {}, {}};
    };
    auto r = sim::simulate(config, c, plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.records.size() == cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        auto& rec = r.records[i];
        auto spec = config.units[rec.unit];
        INFO("command " << i << " (" << name(rec.opcode) << "), work " << cases[i].work << ", width "
                        << spec.width);
        REQUIRE(rec.compute_cycles == (cases[i].work + spec.width - 1) / spec.width);
        REQUIRE(rec.end - rec.start >= rec.compute_cycles + spec.latency);
    }
}

TEST_CASE("an embed reads one table row per token row, not the whole table") {
    auto config = card::default_card_config();
    const std::uint64_t width = 256, rows = 3, table_rows = 1000;
    const std::uint64_t stride = kernels::matrix_layout(config, 1, width).row_stride();
    Command embed;
    embed.opcode = Opcode::Embed;
    embed.unit = Unit::Embed;
    embed.operands = {{Region::Weights, Access::Read, 0, table_rows * stride},
                      {Region::Io, Access::Read, 0, 4 * rows},
                      arena(Access::Write, 0, 4 * rows * width)};
    embed.dims = {rows, width};
    Loaded c;
    c.program.arena_bytes = 1 << 20;
    c.program.regions = {{Region::Weights, Space::Ddr, 0, 1 << 22},
                         {Region::Io, Space::Ddr, 1 << 23, 4096},
                         {Region::Arena, Space::Sram, 0, 1 << 20}};
    c.program.commands.push_back(embed);
    c.program.host.vocab = table_rows;
    sim::RunPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.inputs = [](std::size_t, const sim::StepOutputs*) {
        return sim::StepInputs{{}, {0, 0, 0}, {}, {}, {}, {}, {}, {}};
    };
    auto r = sim::simulate(config, c, plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.records.size() == 1);
    CHECK(r.records[0].bytes_read == rows * stride + 4 * rows);
    std::uint64_t per_channel = 0;
    for (auto b : r.records[0].channel_read)
        per_channel += b;
    CHECK(per_channel == rows * stride + 4 * rows);
}
