// Mixture-of-experts models on the card (engine/lower/emit_experts.cpp, sim/units/router.cpp, the
// matvec unit's expert matvecs): outputs read back from modelled DDR equal the golden executor's
// bit for bit at every knob point; a step's expert bytes are the union of the chosen experts, each
// once; a timing-only run given a full run's routing has that run's cycles and DDR bytes.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "engine/graph/routing.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/slots.hpp"
#include "models/build.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>

using namespace cardsim;

namespace {

// 8 positions: a hybrid's int8 cache of 4 sequences takes 144 bytes a sequence, whose 4 unpadded
// parts are also 3 padded ones of 192 (the golden executor's stores are padded as the card's).
constexpr std::size_t seqs = 4, steps = 3, max_positions = 8;

/// A card with experts (the router unit) at knob point `point`.
card::CardConfig experts_card(const numerics::EngineNumerics& point = {}) {
    const card::Override on{"capabilities.experts", "true"};
    auto c = card::load_card_config(std::nullopt, std::span(&on, 1));
    c.numerics = point;
    return c;
}

/// A generated checkpoint of `arch` and `size` in `d`, loaded.
models::Model model(const test::ScratchDir& d, models::SynthArch arch, models::SynthSize size) {
    models::SynthOptions o;
    o.arch = arch;
    o.size = size;
    o.seed = 3;
    const auto dir = d / (std::string(models::name(arch)) + "-" + std::string(models::name(size)));
    if (!std::filesystem::exists(dir)) models::make_model(o, dir);
    return models::load_model(dir);
}

/// Step `s`'s inputs: `seqs` sequences, other tokens each step, at position s.
graph::BatchInputs inputs(std::size_t s, std::size_t vocab) {
    graph::BatchInputs in;
    for (std::size_t q = 0; q < seqs; ++q) {
        in.ids.push_back(std::uint32_t((5 + 11 * s + 29 * q) % vocab));
        in.positions.push_back(std::uint32_t(s));
    }
    return in;
}

std::size_t vocab_of(const models::Model& m) {
    return std::get<models::DecoderSpec>(m.spec).vocab;
}

/// Lowers `m` for `config` (decode, `seqs` sequences).
lower::Compiled compile(const models::Model& m, const graph::Graph& g, const card::CardConfig& config) {
    return lower::lower(g, m.checkpoint, lower::target_of(config),
                        lower::Options{graph::Bucket{seqs, seqs, 0}, max_positions});
}

/// Runs `c` for `steps` steps; timing-only runs take `routing` (per step).
sim::RunResult run(const card::CardConfig& config, const lower::Compiled& c, std::size_t vocab,
                   sim::Mode mode, const graph::RoutingTrace& routing = {}) {
    sim::RunPlan plan;
    plan.steps = steps;
    plan.mode = mode;
    plan.inputs = [&](std::size_t s, const sim::StepOutputs*) {
        auto in = inputs(s, vocab);
        if (s < routing.size()) in.routing = routing[s];
        return in;
    };
    return sim::simulate(config, c, plan);
}

/// In a child: runs `m` at `point` and compares every output of every step with the golden
/// executor's. Returns {1 when bit-exact, route commands, the routing the golden executor chose
/// equals the run's (1/0)}; {0, ...} on a fault.
std::vector<std::uint64_t> bit_exact(const models::Model& m, const numerics::EngineNumerics& point) {
    return test::in_child([&] {
        const auto config = experts_card(point);
        const auto built = models::build_graph(m);
        const auto& g = built.graph;
        auto c = compile(m, g, config);
        std::uint64_t routes = 0;
        for (auto& cmd : c.program.commands)
            routes += cmd.opcode == program::Opcode::Route;
        auto r = run(config, c, vocab_of(m), sim::Mode::Full);
        if (r.fault || r.outputs.size() != steps) return std::vector<std::uint64_t>{0, routes, 0};
        golden::Golden gold(g, m.checkpoint, config, graph::Bucket{seqs, seqs, 0}, max_positions);
        std::uint64_t same = 1, same_routing = r.routing.size() == steps;
        for (std::size_t s = 0; s < steps; ++s) {
            gold.step(inputs(s, vocab_of(m)));
            same_routing = same_routing && gold.routing() == r.routing[s];
            for (std::size_t o = 0; o < c.io.outputs.size(); ++o) {
                const auto& expect = gold.value(c.io.outputs[o].first);
                const auto& got = r.outputs[s].values[o];
                same = same && got.size() == 4 * expect.size() &&
                       std::memcmp(got.data(), expect.data(), got.size()) == 0;
            }
        }
        return std::vector<std::uint64_t>{same, routes, same_routing};
    });
}

} // namespace

TEST_CASE("a Moe model's outputs on the card equal the golden executor's bit for bit at every knob point",
          "[sim][experts]") {
    test::ScratchDir d("experts-exact");
    const std::pair<models::SynthArch, models::SynthSize> cases[] = {
        {models::SynthArch::Moe, models::SynthSize::Tiny},
        {models::SynthArch::Moe, models::SynthSize::Small},
        {models::SynthArch::HybridMoe, models::SynthSize::Tiny},   // a shared expert under its sigmoid gate
        {models::SynthArch::HybridMoe35, models::SynthSize::Tiny}, // experts as rows of fused tensors
    };
    for (auto [arch, size] : cases) {
        const auto m = model(d, arch, size);
        const auto layers = std::get<models::DecoderSpec>(m.spec).layers.size();
        for (const auto& point : numerics::all_points()) {
            INFO(models::name(arch) << " " << models::name(size) << " at " << numerics::to_string(point));
            const auto got = bit_exact(m, point);
            REQUIRE(got.size() == 3);
            CHECK(got[1] == layers); // one route a Moe layer: the experts really ran on the card
            CHECK(got[0] == 1);
            CHECK(got[2] == 1);
        }
    }
}

TEST_CASE("a step's expert bytes from DDR are the chosen experts' table entries and matrices, each once",
          "[sim][experts]") {
    test::ScratchDir d("experts-bytes");
    const auto m = model(d, models::SynthArch::Moe, models::SynthSize::Tiny);
    const auto config = experts_card();
    const auto built = models::build_graph(m);
    auto c = compile(m, built.graph, config);
    auto r = run(config, c, vocab_of(m), sim::Mode::Full);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.routing.size() == steps);
    const auto& spec = *std::get<models::DecoderSpec>(m.spec).moe;
    const std::uint64_t H = std::get<models::DecoderSpec>(m.spec).hidden, I = spec.intermediate;
    const std::uint64_t gate_up = kernels::matrix_layout(config, 2 * I, H).bytes();
    const std::uint64_t down = kernels::matrix_layout(config, H, I).bytes();
    bool shared_streams = false; // some step has an expert chosen by several rows
    for (std::size_t s = 0; s < steps; ++s) {
        // What the routing says the step's expert matvecs move: per router, its distinct experts'
        // table entries (8 bytes each, for each of the two matvecs) and matrices.
        std::uint64_t want = 0;
        for (auto& chosen : r.routing[s]) {
            REQUIRE(chosen.size() == seqs * spec.top_k);
            const auto u = graph::distinct_experts(chosen);
            shared_streams = shared_streams || u < chosen.size();
            want += u * (8 + gate_up + 8 + down);
        }
        std::uint64_t got = 0, commands = 0;
        for (auto& rec : r.records) {
            if (rec.step != s || rec.opcode != program::Opcode::ExpertMatvec) continue;
            ++commands;
            for (auto b : rec.channel_read)
                got += b;
        }
        INFO("step " << s);
        CHECK(commands == 2 * r.routing[s].size());
        CHECK(got == want);
    }
    CHECK(shared_streams); // the test is not vacuous: an expert several rows chose streamed once
}

TEST_CASE("an expert matvec's streams behind its own earlier ones are its DDR data, not queueing",
          "[sim][experts][stalls]") {
    // Its chosen experts' matrices go to the DDR one after another from the same issue cycle, so
    // each waits in the controller for the ones before it: that is the command moving its own
    // bytes. Decode of one model at a time leaves nothing else to queue behind but its own table
    // reads and the commands overlapping it, far less than its matrices.
    test::ScratchDir d("experts-stalls");
    const auto m = model(d, models::SynthArch::Moe, models::SynthSize::Small);
    const auto config = experts_card();
    const auto built = models::build_graph(m);
    const auto c = compile(m, built.graph, config);
    auto uniform = graph::RoutingModel::parse("uniform", 7);
    graph::RoutingTrace routing;
    for (std::size_t s = 0; s < steps; ++s)
        routing.push_back(uniform.step(s, graph::routers(built.graph), seqs));
    // Per expert matvec: its ddr.queueing and ddr.data cycles.
    const auto parts = test::in_child([&] {
        std::vector<std::uint64_t> v;
        for (auto& rec : run(config, c, vocab_of(m), sim::Mode::TimingOnly, routing).records)
            if (rec.opcode == program::Opcode::ExpertMatvec)
                v.insert(v.end(), {rec.time[sim::TimePart::DdrQueueing], rec.time[sim::TimePart::DdrData]});
        return v;
    });
    REQUIRE(parts.size() == 2 * 2 * steps * graph::routers(built.graph).size());
    for (std::size_t k = 0; k < parts.size(); k += 2) {
        INFO("expert matvec " << k / 2 << ": ddr.queueing " << parts[k] << ", ddr.data " << parts[k + 1]);
        CHECK(parts[k + 1] > 0);
        CHECK(parts[k] * 4 < parts[k + 1]);
    }
}

TEST_CASE("a timing-only run given a full run's routing has that run's cycles and DDR bytes",
          "[sim][experts]") {
    test::ScratchDir d("experts-timing");
    const auto m = model(d, models::SynthArch::Moe, models::SynthSize::Small);
    const auto config = experts_card();
    const auto built = models::build_graph(m);
    const auto c = compile(m, built.graph, config);
    // Per command: start and end; then the run's cycles and each channel's read and written bytes.
    auto measure = [](const sim::RunResult& r) {
        std::vector<std::uint64_t> v;
        for (auto& rec : r.records)
            v.insert(v.end(), {rec.start, rec.end});
        v.push_back(r.cycles);
        for (auto& ch : r.channels)
            v.insert(v.end(), {ch.read_bytes, ch.write_bytes});
        return v;
    };
    // The full run, and its routing flattened after a separator.
    auto full = test::in_child([&] {
        auto r = run(config, c, vocab_of(m), sim::Mode::Full);
        if (r.fault) return std::vector<std::uint64_t>{};
        auto v = measure(r);
        v.push_back(~std::uint64_t{0});
        for (auto& step : r.routing) {
            v.push_back(step.size());
            for (auto& router : step) {
                v.push_back(router.size());
                v.insert(v.end(), router.begin(), router.end());
            }
        }
        return v;
    });
    REQUIRE_FALSE(full.empty());
    const auto sep = std::find(full.begin(), full.end(), ~std::uint64_t{0});
    REQUIRE(sep != full.end());
    graph::RoutingTrace routing;
    for (auto it = sep + 1; it != full.end();) {
        auto& step = routing.emplace_back(*it++);
        for (auto& router : step) {
            const auto n = *it++;
            router.assign(it, it + std::ptrdiff_t(n));
            it += std::ptrdiff_t(n);
        }
    }
    REQUIRE(routing.size() == steps);
    const std::vector<std::uint64_t> want(full.begin(), sep);
    // Through the routing trace's text, as `run --routing-out` writes it and `--routing trace:` reads it.
    const auto shapes = graph::routers(built.graph);
    const auto again = graph::parse_routing(graph::routing_text(routing, shapes), "the recorded routing");
    REQUIRE(again == routing);
    auto timing =
        test::in_child([&] { return measure(run(config, c, vocab_of(m), sim::Mode::TimingOnly, again)); });
    CHECK(timing == want);
    // Another routing changes the timing: the equality above is not vacuous.
    auto model = graph::RoutingModel::parse("skew:2", 7);
    graph::RoutingTrace skewed;
    for (std::size_t s = 0; s < steps; ++s)
        skewed.push_back(model.step(s, shapes, seqs));
    auto other =
        test::in_child([&] { return measure(run(config, c, vocab_of(m), sim::Mode::TimingOnly, skewed)); });
    CHECK(other != want);
}

TEST_CASE("a timing-only run without the routing of a Moe layer stops naming the command", "[sim][experts]") {
    test::ScratchDir d("experts-none");
    const auto m = model(d, models::SynthArch::Moe, models::SynthSize::Tiny);
    const auto config = experts_card();
    const auto built = models::build_graph(m);
    const auto c = compile(m, built.graph, config);
    auto r = run(config, c, vocab_of(m), sim::Mode::TimingOnly);
    REQUIRE(r.fault);
    CHECK_THAT(*r.fault, Catch::Contains("ExpertMatvec") && Catch::Contains("no routing of router 0"));
}
