// Slot-addressed stores (lower::Options::slots), bucket sets (lower::lower_set) and the open-ended
// session (sim::simulate over a SessionPlan): rows of one step that mix a prefill chunk of one
// sequence with decode rows of others give each row the logits of its sequence run alone, on the
// golden executor and on the card, bit for bit; a sequence's tokens do not depend on its slot or its
// neighbours; a set's buckets share weights and stores, and a session switching buckets is
// bit-exact; an idle wait advances simulated time by the gap; the slot capacity is the DDR left
// over the per-slot bytes; a slot past the stores is refused naming the row and the slot.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/golden/golden.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/validate.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "sim/card/simulation.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>

using namespace cardsim;

namespace {

constexpr std::size_t positions = 16, slots = 3;

/// A tiny generated model of `arch` (hybrid: Gated-DeltaNet with conv windows and gated attention).
models::Model tiny(models::SynthArch arch, const test::ScratchDir& dir) {
    models::SynthOptions o;
    o.arch = arch;
    o.size = models::SynthSize::Tiny;
    o.seed = 3;
    models::make_model(o, dir / "m");
    return models::load_model(dir / "m");
}

/// Each sequence's tokens (sequence s of the tests' three).
std::uint32_t token(std::size_t seq, std::size_t pos) {
    return std::uint32_t(1 + (seq * 37 + pos * 11) % 50);
}

/// One row of a step: the sequence it belongs to (none: a padding row), its slot and position.
struct Row {
    std::optional<std::size_t> seq;
    std::uint32_t slot = 0, pos = 0;
};

/// The inputs of a step of `rows`.
graph::BatchInputs inputs(const std::vector<Row>& rows) {
    graph::BatchInputs in;
    for (auto& r : rows) {
        in.ids.push_back(r.seq ? token(*r.seq, r.pos) : 0);
        in.positions.push_back(r.pos);
        in.slots.push_back(r.slot);
    }
    in.seq_starts = {0, std::uint32_t(rows.size())};
    return in;
}

using Bits = std::vector<std::uint32_t>;

/// The bit patterns of row `r` of `width`-wide f32 rows in `bytes`.
Bits row_bits(std::span<const std::byte> bytes, std::size_t width, std::size_t r) {
    Bits b(width);
    std::memcpy(b.data(), bytes.data() + 4 * r * width, 4 * width);
    return b;
}
Bits row_bits(const std::vector<float>& v, std::size_t width, std::size_t r) {
    return row_bits(std::as_bytes(std::span(v)), width, r);
}

/// Each sequence run alone (no slots, one token a step, its own stores from zero): the logits bits
/// at each of its first `len` positions.
std::map<std::pair<std::size_t, std::uint32_t>, Bits> alone(const models::Model& m, const graph::Graph& g,
                                                            const card::CardConfig& config, std::size_t seqs,
                                                            std::size_t len) {
    std::map<std::pair<std::size_t, std::uint32_t>, Bits> out;
    const std::size_t vocab = g.shape(*g.logits).width;
    for (std::size_t s = 0; s < seqs; ++s) {
        golden::Golden gold(g, m.checkpoint, config, graph::Bucket{1, 1, 0}, positions);
        for (std::uint32_t p = 0; p < len; ++p) {
            graph::BatchInputs in;
            in.ids = {token(s, p)};
            in.positions = {p};
            in.seq_starts = {0, 1};
            gold.step(in);
            out[{s, p}] = row_bits(gold.value(*g.logits), vocab, 0);
        }
    }
    return out;
}

/// The steps of the mixing test: four rows each, a prefill chunk of one sequence beside decode
/// rows of others, and a last step padded with two rows of the pad slot.
std::vector<std::vector<Row>> mixed_steps() {
    return {
        {{1, 1, 0}, {1, 1, 1}, {1, 1, 2}, {0, 0, 0}}, // seq 1 prefills 3, seq 0 decodes
        {{0, 0, 1}, {1, 1, 3}, {2, 2, 0}, {2, 2, 1}}, // seq 2's chunk beside two decodes
        {{2, 2, 2}, {0, 0, 2}, {std::nullopt, 3, 0}, {std::nullopt, 3, 0}}, // two padding rows
    };
}

/// A set of one program.
std::span<const program::Loaded> one(const program::Loaded& c) {
    return {&c, 1};
}

std::size_t logits_output(const program::IoMap& io, const graph::Graph& g) {
    for (std::size_t o = 0; o < io.outputs.size(); ++o)
        if (io.outputs[o].first == g.logits) return o;
    FAIL("no logits output");
    return 0;
}

/// Runs `steps` on `c` (lowered for `bucket` on `store_slots` slots) and checks every row: the
/// card's logits equal the golden executor's, and a live row's equal its sequence run alone
/// (`ref`). Returns the live rows checked.
template <class Ref>
std::size_t run_rows_against_alone(const models::Model& m, const graph::Graph& g,
                                   const card::CardConfig& config, const lower::Compiled& c,
                                   const graph::Bucket& bucket, std::size_t store_slots,
                                   const std::vector<std::vector<Row>>& steps, const Ref& ref) {
    const std::size_t vocab = g.shape(*g.logits).width;
    golden::Golden gold(g, m.checkpoint, config, bucket, positions, store_slots);
    sim::SessionPlan plan;
    plan.next = [&](std::size_t s, double, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        if (s >= steps.size()) return std::nullopt;
        return sim::SessionStep{0, inputs(steps[s]), 0};
    };
    auto r = sim::simulate(config, one(c), plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.outputs.size() == steps.size());
    const auto lo = logits_output(c.io, g);
    std::size_t live = 0;
    for (std::size_t s = 0; s < steps.size(); ++s) {
        gold.step(inputs(steps[s]));
        for (std::size_t row = 0; row < steps[s].size(); ++row) {
            auto card_row = row_bits(r.outputs[s].values[lo], vocab, row);
            CHECK(card_row == row_bits(gold.value(*g.logits), vocab, row)); // the card equals the golden
            auto& rw = steps[s][row];
            if (!rw.seq) continue;
            INFO("step " << s << ", row " << row << ": sequence " << *rw.seq << " at position " << rw.pos);
            CHECK(card_row == ref.at({*rw.seq, rw.pos})); // and each row its sequence run alone
            ++live;
        }
    }
    return live;
}

void mixing_equals_alone(models::SynthArch arch) {
    test::ScratchDir dir("slots-mixing");
    auto m = tiny(arch, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    auto& g = built.graph;
    auto ref = alone(m, g, config, 3, 4);
    const graph::Bucket bucket{4, 1, 0};
    lower::Options o{bucket, positions};
    o.slots = slots;
    auto c = lower::lower(g, m.checkpoint, lower::target_of(config), o);
    REQUIRE(c.io.slot_count == slots);
    REQUIRE(c.io.pad_slot() == slots);
    REQUIRE(run_rows_against_alone(m, g, config, c, bucket, slots, mixed_steps(), ref) == 10);
}

} // namespace

TEST_CASE("a_step_mixing_a_prefill_chunk_and_decode_rows_equals_each_sequence_run_alone (hybrid)") {
    mixing_equals_alone(models::SynthArch::Hybrid);
}

TEST_CASE("a_step_mixing_a_prefill_chunk_and_decode_rows_equals_each_sequence_run_alone (dense)") {
    mixing_equals_alone(models::SynthArch::Dense);
}

TEST_CASE("a_reused_slot_starts_its_new_sequence_from_zero_state (hybrid: conv windows and delta states)") {
    test::ScratchDir dir("slots-reuse");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    auto& g = built.graph;
    auto ref = alone(m, g, config, 3, 4);
    const graph::Bucket bucket{2, 1, 0};
    lower::Options o{bucket, positions};
    o.slots = 1;
    auto c = lower::lower(g, m.checkpoint, lower::target_of(config), o);
    // Sequence 0 runs four positions in slot 0 and retires; sequence 1 takes slot 0 (a chunk of two,
    // then two decodes), then sequence 2 (one row a step). Padding goes to the pad slot.
    const std::uint32_t pad = std::uint32_t(c.io.pad_slot());
    const std::vector<std::vector<Row>> steps{
        {{0, 0, 0}, {0, 0, 1}},
        {{0, 0, 2}, {0, 0, 3}}, // sequence 0
        {{1, 0, 0}, {1, 0, 1}},
        {{1, 0, 2}, {std::nullopt, pad, 0}},
        {{1, 0, 3}, {std::nullopt, pad, 0}},
        {{2, 0, 0}, {std::nullopt, pad, 0}},
        {{2, 0, 1}, {2, 0, 2}}, // sequence 2
    };
    // Each row equals its sequence alone: nothing of the slot's last occupant.
    REQUIRE(run_rows_against_alone(m, g, config, c, bucket, 1, steps, ref) == 11);
}

TEST_CASE("a_sequences_tokens_do_not_depend_on_its_slot_or_its_neighbours") {
    test::ScratchDir dir("slots-neighbours");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    auto& g = built.graph;
    const std::size_t vocab = g.shape(*g.logits).width;
    // Sequence 0 decodes three positions: in slot 0 beside sequence 1 (a chunk, then decodes), and
    // in slot 2 beside sequence 2 in slot 1, its row placed last.
    auto run = [&](std::uint32_t slot, std::size_t other, std::uint32_t other_slot, bool last) {
        golden::Golden gold(g, m.checkpoint, config, graph::Bucket{3, 1, 0}, positions, slots);
        std::vector<Bits> got;
        for (std::uint32_t p = 0; p < 3; ++p) {
            std::vector<Row> rows{{other, other_slot, 2 * p}, {other, other_slot, 2 * p + 1}};
            rows.insert(last ? rows.end() : rows.begin(), Row{0, slot, p});
            gold.step(inputs(rows));
            got.push_back(row_bits(gold.value(*g.logits), vocab, last ? 2 : 0));
        }
        return got;
    };
    auto a = run(0, 1, 1, false), b = run(2, 2, 1, true);
    REQUIRE(a.size() == 3);
    CHECK(a == b);
    auto ref = alone(m, g, config, 1, 3);
    for (std::uint32_t p = 0; p < 3; ++p)
        CHECK(a[p] == ref.at({0, p}));
}

TEST_CASE(
    "buckets_of_a_set_share_weights_and_stores and a session switching buckets each step is bit-exact") {
    test::ScratchDir dir("slots-set");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    auto& g = built.graph;
    const std::size_t vocab = g.shape(*g.logits).width;
    const std::vector<graph::Bucket> buckets{{1, 1, 0}, {2, 1, 0}, {4, 1, 0}};
    lower::Options o{buckets[0], positions};
    o.slots = slots;
    auto set = lower::lower_set(g, m.checkpoint, lower::target_of(config), o, buckets);
    REQUIRE(set.size() == 3);
    using program::Region;
    for (std::size_t k = 1; k < set.size(); ++k) {
        for (auto r : {Region::Weights, Region::Caches, Region::State})
            CHECK(*set[k].program.region(r) == *set[0].program.region(r));
        CHECK(set[k].program.image_digest == set[0].program.image_digest);
        CHECK(set[k].image.chunks.empty()); // the first bucket holds the one copy of the image
        auto *a = set[k - 1].program.region(Region::Program), *b = set[k].program.region(Region::Program);
        CHECK(a->base + a->size <= b->base); // each bucket's commands after the one before's
        CHECK(set[k].io.ids.bytes == 4 * buckets[k].tokens);
    }
    // A program lowered on its own for other slots has other stores: the set is refused.
    lower::Options other = o;
    other.slots = slots + 1;
    std::vector<program::Loaded> mixed{set[0],
                                       lower::lower(g, m.checkpoint, lower::target_of(config), other)};
    sim::SessionPlan none;
    none.next = [](std::size_t, double, const sim::StepOutputs*) {
        return std::optional<sim::SessionStep>{};
    };
    REQUIRE_THROWS_WITH(sim::simulate(config, mixed, none),
                        Catch::Contains("bucket 1's caches region") && Catch::Contains("share"));

    // The steps: bucket 2 (a chunk and a decode), bucket 0 (one decode), bucket 1 (two decodes), 2.
    const std::vector<std::pair<std::size_t, std::vector<Row>>> steps{
        {2, {{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {1, 2, 0}}},
        {0, {{1, 2, 1}}},
        {1, {{0, 0, 3}, {1, 2, 2}}},
        {2, {{2, 1, 0}, {2, 1, 1}, {1, 2, 3}, {std::nullopt, slots, 0}}},
    };
    auto ref = alone(m, g, config, 3, 4);
    std::vector<program::Loaded> loaded(set.begin(), set.end());
    sim::SessionPlan plan;
    plan.next = [&](std::size_t s, double, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        if (s >= steps.size()) return std::nullopt;
        return sim::SessionStep{steps[s].first, inputs(steps[s].second), 0};
    };
    auto r = sim::simulate(config, loaded, plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.outputs.size() == steps.size());
    REQUIRE(r.step_bucket == std::vector<std::size_t>{2, 0, 1, 2});
    for (std::size_t s = 0; s < steps.size(); ++s) {
        const auto lo = logits_output(set[steps[s].first].io, g);
        for (std::size_t row = 0; row < steps[s].second.size(); ++row) {
            auto& rw = steps[s].second[row];
            if (!rw.seq) continue;
            INFO("step " << s << ", row " << row);
            CHECK(row_bits(r.outputs[s].values[lo], vocab, row) == ref.at({*rw.seq, rw.pos}));
        }
        if (s > 0) CHECK(r.step_start[s] >= r.step_end[s - 1]);
    }
}

TEST_CASE("an_idle_wait_advances_simulated_time_by_exactly_the_gap (within one kernel cycle)") {
    test::ScratchDir dir("slots-idle");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    lower::Options o{graph::Bucket{2, 1, 0}, positions};
    o.slots = slots;
    auto c = lower::lower(built.graph, m.checkpoint, lower::target_of(config), o);
    const double gap = 250e-6;
    std::vector<double> asked;
    sim::SessionPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.next = [&](std::size_t s, double now, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        asked.push_back(now);
        if (s >= 3) return std::nullopt;
        // Step 1 may start only `gap` after step 0 ended; step 2 asks for a time already past.
        double not_before = s == 1 ? now + gap : s == 2 ? now / 2 : 0;
        return sim::SessionStep{0, inputs({{0, 0, std::uint32_t(2 * s)}, {0, 0, std::uint32_t(2 * s + 1)}}),
                                not_before};
    };
    auto r = sim::simulate(config, one(c), plan);
    REQUIRE_FALSE(r.fault);
    REQUIRE(r.step_end.size() == 3);
    const double cycle = 1e-6 / config.clock.kernel_mhz;
    // `now` is when the previous step ended.
    CHECK(asked[1] == Approx(double(r.step_end[0]) * cycle));
    const double idle = double(r.step_start[1] - r.step_end[0]) * cycle;
    CHECK(idle >= gap - 1e-3 * cycle);
    CHECK(idle <= gap + 1.001 * cycle);      // the first kernel edge at or after the gap
    CHECK(r.step_start[2] == r.step_end[1]); // a time already past: no wait
    CHECK(r.seconds == Approx(double(r.step_end[2]) * cycle));
    CHECK(r.seconds > gap); // the idle time counts in the run's seconds
}

TEST_CASE(
    "slot capacity: slots = floor(free DDR / per-slot bytes) with per-slot bytes the sum of the stores") {
    test::ScratchDir dir("slots-capacity");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    config.ddr.capacity_mib = 4; // a small card, so that the slots run out
    auto built = models::build_graph(m);
    auto& g = built.graph;
    auto target = lower::target_of(config);
    const std::vector<graph::Bucket> buckets{{1, 1, 0}, {8, 1, 0}};
    lower::Options o{buckets[0], positions};
    auto cap = lower::slot_capacity(g, m.checkpoint, target, o, buckets);
    // One slot's stores, from the graph's head counts and dims and the config's row formats.
    auto lined = [](std::uint64_t b) { return (b + 63) / 64 * 64; };
    std::uint64_t per_slot = 0;
    std::size_t caches = 0, deltas = 0, windows = 0;
    for (auto& s : g.states) {
        if (auto* k = std::get_if<graph::KeyCache>(&s)) {
            per_slot +=
                lined(k->kv_heads * positions * kernels::cache_row_bytes(config.numerics.cache, k->head_dim));
            ++caches;
        } else if (auto* v = std::get_if<graph::ValueCache>(&s)) {
            per_slot +=
                lined(v->kv_heads * positions * kernels::cache_row_bytes(config.numerics.cache, v->head_dim));
            ++caches;
        } else if (auto* d = std::get_if<graph::DeltaState>(&s)) {
            per_slot += lined(d->heads * d->dk * d->dv * kernels::state_element_bytes(config.numerics.state));
            ++deltas;
        } else if (auto* w = std::get_if<graph::ConvWindow>(&s)) {
            per_slot += lined(4 * w->channels * (w->kernel - 1));
            ++windows;
        }
    }
    REQUIRE(caches > 0);
    REQUIRE(deltas > 0);
    REQUIRE(windows > 0);
    CHECK(cap.per_slot == per_slot);
    // Free: the card's DDR less the weights, the set's io and programs, the pad slot and a stripe
    // per store region.
    o.slots = 1;
    auto set = lower::lower_set(g, m.checkpoint, target, o, buckets);
    auto& c = set.back().capacity;
    const std::uint64_t stripe = std::uint64_t(config.ddr.interleave_bytes) * config.ddr.channels;
    const std::uint64_t free =
        config.ddr.total_bytes() - c.weights - c.io - c.program - per_slot - 2 * stripe;
    CHECK(cap.free == free);
    CHECK(cap.slots == free / per_slot);
    REQUIRE(cap.slots > 1);
    // That many slots fit the card; far more are refused with the capacity sentence.
    o.slots = cap.slots;
    auto full = lower::lower_set(g, m.checkpoint, target, o, buckets);
    CHECK(full.back().capacity.fits());
    o.slots = 2 * cap.slots + 4;
    CHECK_THROWS_WITH(lower::lower_set(g, m.checkpoint, target, o, buckets), Catch::Contains("caches"));
}

TEST_CASE("a_slot_index_past_the_store_is_refused_naming_row_and_slot") {
    test::ScratchDir dir("slots-refused");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    auto& g = built.graph;
    const graph::Bucket bucket{2, 1, 0};
    lower::Options o{bucket, positions};
    o.slots = slots;
    auto c = lower::lower(g, m.checkpoint, lower::target_of(config), o);
    auto bad = inputs({{0, 0, 0}, {1, 7, 0}});
    // The kernels (through the golden executor), the host's check, and the card's host.
    golden::Golden gold(g, m.checkpoint, config, bucket, positions, slots);
    CHECK_THROWS_WITH(gold.step(bad), Catch::Contains("row 1 names slot 7"));
    auto why = program::slots_refusal(c.io, bad.slots);
    REQUIRE(why);
    CHECK_THAT(*why, Catch::Contains("row 1 names slot 7") && Catch::Contains("0 .. 3 (3 the pad slot)"));
    CHECK(program::slots_refusal(c.io, std::vector<std::uint32_t>{0, 3}) == std::nullopt); // the pad slot
    CHECK(program::slots_refusal(c.io, std::vector<std::uint32_t>{0}));                    // one per row
    sim::SessionPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.next = [&](std::size_t s, double, const sim::StepOutputs*) -> std::optional<sim::SessionStep> {
        if (s >= 2) return std::nullopt;
        return sim::SessionStep{0, s == 0 ? inputs({{0, 0, 0}, {1, 1, 0}}) : bad, 0};
    };
    auto r = sim::simulate(config, one(c), plan);
    REQUIRE(r.fault);
    CHECK_THAT(*r.fault, Catch::Contains("step 1: row 1 names slot 7"));
    CHECK(r.step_end.size() == 1);
}

TEST_CASE("a program with slots reads back as written, one without leaves the slots operand out") {
    test::ScratchDir dir("slots-format");
    auto m = tiny(models::SynthArch::Hybrid, dir);
    auto config = card::default_card_config();
    auto built = models::build_graph(m);
    lower::Options o{graph::Bucket{2, 1, 0}, positions};
    auto plain = lower::lower(built.graph, m.checkpoint, lower::target_of(config), o);
    o.slots = slots;
    auto slotted = lower::lower(built.graph, m.checkpoint, lower::target_of(config), o);
    for (auto* c : {&plain, &slotted}) {
        auto back = program::decode(program::encode(c->program));
        CHECK(back == c->program);
        program::validate(back, &config, "p");
        auto io = program::io_map(back.host);
        CHECK(io.slot_count == (c == &slotted ? slots : 0));
    }
    // The stateful commands differ by their slot operands (24 bytes each): `slots`, and the
    // recurrent ones' `positions` too.
    std::size_t tail = 0;
    for (auto& c : plain.program.commands)
        tail += program::slot_tail(program::spec(c.opcode));
    REQUIRE(tail > 0);
    CHECK(program::card_bytes(slotted.program) == program::card_bytes(plain.program) + 24 * tail);
}
