// Layer checks on the simulated card: every layer's output, read back from modelled DDR after each
// step, equals the golden executor's bit for bit; a wrong result inside one layer is named at that
// layer's output, the first to differ, where without layer checks it shows only in the logits.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/graph/probe.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/slots.hpp"
#include "engine/verify/verify.hpp"
#include "sim/card/simulation.hpp"
#include "sim/units/unit_set.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/in_child.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;

namespace {

const graph::DecoderShape shape{3, 128, 4, 2, 32, 256, 300};
const graph::Bucket bucket{2, 2, 0};
constexpr std::size_t steps = 3, max_positions = 8;

graph::BatchInputs inputs(std::size_t s) {
    auto t = std::uint32_t(s);
    return graph::BatchInputs{{5 + 11 * t, 77 + 3 * t}, {t, t}, {}, {}, {}, {}, {}, {}};
}

/// Lowers the example decoder, observing every layer's output when `probes`.
lower::Compiled compile(const graph::Graph& g, const test::GraphWeights& w, const card::CardConfig& config,
                        bool probes) {
    lower::Options o(bucket, max_positions);
    if (probes)
        for (std::size_t l = 0; l < graph::layer_count(g); ++l)
            o.probes.push_back(graph::layer_output(g, l));
    return lower::lower(g, w, lower::target_of(config), o);
}

/// The last matvec of `layer` (its MLP's down projection): the command a faulty unit gets wrong.
program::Command last_matvec_of(const graph::Graph& g, const lower::Compiled& c, std::size_t layer) {
    std::optional<program::Command> last;
    for (std::size_t i = 0; i < c.program.commands.size(); ++i)
        if (c.program.commands[i].opcode == program::Opcode::Matvec && c.op_of[i] < g.ops.size() &&
            g.sites[c.op_of[i]].layer == layer)
            last = c.program.commands[i];
    REQUIRE(last);
    return *last;
}

/// A matvec that gets one command wrong: element 0 of its first output plus 1000 at the
/// `bad_step`-th time it runs `wrong` (a fault no rounding hides downstream). Registered in place of
/// the card's matvec: swapping a unit's implementation is one `UnitSet::set`.
class FaultyMatvec final : public sim::units::Unit {
public:
    FaultyMatvec(std::shared_ptr<const sim::units::Unit> good, program::Command wrong, std::size_t bad_step)
        : Unit(card::UnitKind::Matvec), good_(std::move(good)), wrong_(std::move(wrong)),
          bad_step_(bad_step) {}
    bool runs(program::Opcode op) const override { return good_->runs(op); }
    std::uint64_t work(const program::Command& c, const sim::units::Step& s) const override {
        return good_->work(c, s);
    }
    std::vector<sim::units::Span> traffic(const program::Command& c, std::size_t k,
                                          const sim::units::Step& s) const override {
        return good_->traffic(c, k, s);
    }
    void compute(const program::Command& c, sim::units::Operands operands) const override {
        good_->compute(c, operands);
        if (c == wrong_ && (*seen_)++ == bad_step_) {
            auto out = operands[program::at(program::slots::Matvec::Operand::out)];
            float v;
            std::memcpy(&v, out.data(), 4);
            v += 1000.0f;
            std::memcpy(out.data(), &v, 4);
        }
    }

private:
    std::shared_ptr<const sim::units::Unit> good_;
    program::Command wrong_;
    std::size_t bad_step_;
    std::shared_ptr<std::size_t> seen_ = std::make_shared<std::size_t>(0);
};

/// Runs `c` for every step and verifies it; given `wrong`, the card's matvec gets that command wrong
/// at step `bad_step`.
verify::Verdict run_and_verify(const graph::Graph& g, const test::GraphWeights& w,
                               const card::CardConfig& config, const lower::Compiled& c,
                               const program::Command* wrong = nullptr, std::size_t bad_step = 0) {
    sim::RunPlan plan;
    plan.steps = steps;
    plan.inputs = [](std::size_t s, const sim::StepOutputs*) { return inputs(s); };
    if (wrong) {
        auto units = sim::units::UnitSet::standard(config);
        units.set(std::make_shared<FaultyMatvec>(units.shared(card::UnitKind::Matvec), *wrong, bad_step));
        plan.units = units;
    }
    auto r = sim::simulate(config, c, plan);
    REQUIRE_FALSE(r.fault);
    std::vector<verify::Readback> back;
    for (auto& o : r.outputs)
        back.push_back(o.values);
    std::vector<graph::BatchInputs> in;
    for (std::size_t s = 0; s < steps; ++s)
        in.push_back(inputs(s));
    return verify::verify(g, w, config, c, in, back);
}

} // namespace

TEST_CASE("every layer's output read back after each step equals the golden executor's bit for bit") {
    auto config = card::default_card_config();
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    auto c = compile(g, w, config, true);
    auto v = run_and_verify(g, w, config, c);
    INFO((v.first ? v.first->text() : ""));
    REQUIRE(v.bit_exact());
    REQUIRE(v.steps == steps);
    REQUIRE(v.layers == std::vector<std::size_t>{0, 1, 2});
    REQUIRE(v.values == steps * (c.io.graph_outputs() + 3)); // logits, next and three layers a step
}

TEST_CASE("a wrong result inside a layer is named at that layer's output: the first value to differ") {
    auto config = card::default_card_config();
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    // Without layer checks (in a child: one simulation a process) the fault shows only at an output.
    auto unprobed = test::in_child([&] {
        auto c = compile(g, w, config, false);
        auto wrong = last_matvec_of(g, c, 1);
        auto v = run_and_verify(g, w, config, c, &wrong, 1);
        if (!v.first) return std::vector<std::uint64_t>{};
        return std::vector<std::uint64_t>{v.first->step, v.first->probe ? 1u : 0u};
    });
    REQUIRE(unprobed == std::vector<std::uint64_t>{1, 0});
    auto c = compile(g, w, config, true);
    auto wrong = last_matvec_of(g, c, 1);
    auto v = run_and_verify(g, w, config, c, &wrong, 1);
    REQUIRE(v.first);
    INFO(v.first->text());
    REQUIRE(v.first->step == 1); // step 0 was right, its layers and outputs compared
    REQUIRE(v.first->probe);
    REQUIRE(v.first->layer == 1); // layer 0's output still agrees
    REQUIRE(v.first->card != v.first->golden);
    REQUIRE_THAT(v.first->text(), Catch::StartsWith("step 1, layer 1 output (h), element "));
    REQUIRE_THAT(v.first->text(), Catch::Contains(fmt::format("card {:#010x}", v.first->card)));
}
