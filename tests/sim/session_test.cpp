// An open-ended session on the card: the host asks for each step, may idle until an arrival, and a
// set of buckets must share one region table. A session of fixed steps is the fixed run itself.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cmath>
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

TEST_CASE("an idle wait advances simulated time by exactly the gap, to the next kernel cycle") {
    Tiny t;
    const double gap = 1e-3;
    std::vector<double> asked_at;
    sim::SessionPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.next = [&](std::size_t s, double now, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        asked_at.push_back(now);
        if (s == 2) return std::nullopt;
        return sim::SessionStep{0, token(5, std::uint32_t(s)), s == 1 ? now + gap : 0};
    };
    const program::Loaded& loaded = t.compiled;
    auto r = sim::simulate(t.config, std::span(&loaded, 1), plan);
    REQUIRE(r.step_start.size() == 2);
    const double cycle = 1e-6 / t.config.clock.kernel_mhz;
    const double idle_from = asked_at[1], started = double(r.step_start[1]) * cycle;
    // In seconds the start is the gap after the ask, to a cycle (the clock keeps femtoseconds).
    CHECK(started >= idle_from + gap - cycle);
    CHECK(started <= idle_from + gap + 2 * cycle);
    // The idle cycles are the gap's, or one more for the edge: the steps' own cycles do not move.
    const auto idle = r.step_start[1] - r.step_end[0], want = std::uint64_t(std::llround(gap / cycle));
    CHECK((idle == want || idle == want + 1));
    CHECK(r.seconds >= asked_at[1] + gap);
}

TEST_CASE("a set of buckets that do not share one region table is refused") {
    Tiny t;
    auto built = models::build_graph(t.model);
    auto other = lower::lower(built.graph, t.model.checkpoint, lower::target_of(t.config),
                              lower::Options{graph::Bucket{2, 2, 0}, 8});
    std::vector<program::Loaded> set{t.compiled, other};
    sim::SessionPlan plan;
    plan.next = [](std::size_t, double, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        return std::nullopt;
    };
    try {
        sim::simulate(t.config, set, plan);
        FAIL("the set ran");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("share one region table") != std::string::npos);
    }
}
