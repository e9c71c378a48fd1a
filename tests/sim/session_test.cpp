// An open-ended session of fixed steps is the fixed run itself (the idle waits and bucket sets:
// tests/sim/slots_test.cpp).

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;

namespace {

/// A tiny hybrid decoder compiled for one sequence and 8 positions, with its config.
struct Tiny {
    test::ScratchDir dir{"session"};
    card::CardConfig config = card::default_card_config();
    models::Model model;
    lower::Compiled compiled;
    Tiny() {
        models::SynthOptions o;
        o.arch = models::SynthArch::Hybrid;
        o.size = models::SynthSize::Tiny;
        o.seed = 3;
        models::make_model(o, dir / "m");
        model = models::load_model(dir / "m");
        auto built = models::build_graph(model);
        compiled = lower::lower(built.graph, model.checkpoint, lower::target_of(config),
                                lower::Options{graph::Bucket{1, 1, 0}, 8});
    }
};

graph::BatchInputs token(std::uint32_t id, std::uint32_t position) {
    graph::BatchInputs in;
    in.ids = {id};
    in.positions = {position};
    in.seq_starts = {0, 1};
    return in;
}

/// The step ends of a fixed run of 4 steps.
std::vector<std::uint64_t> fixed_run(const Tiny& t) {
    sim::RunPlan plan;
    plan.steps = 4;
    plan.inputs = [](std::size_t s, const sim::StepOutputs*) { return token(5, std::uint32_t(s)); };
    return sim::simulate(t.config, t.compiled, plan).step_end;
}

} // namespace

TEST_CASE("a session of back-to-back steps gives the cycles of the fixed run") {
    Tiny t;
    auto fixed = test::in_child([&] { return fixed_run(t); });
    sim::SessionPlan plan;
    plan.next = [](std::size_t s, double, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        if (s == 4) return std::nullopt;
        return sim::SessionStep{0, token(5, std::uint32_t(s)), 0};
    };
    const program::Loaded& loaded = t.compiled;
    auto r = sim::simulate(t.config, std::span(&loaded, 1), plan);
    REQUIRE_FALSE(r.fault);
    CHECK(r.step_end == fixed);
    REQUIRE(r.step_start.size() == 4);
    CHECK(r.step_bucket == std::vector<std::size_t>{0, 0, 0, 0});
}
