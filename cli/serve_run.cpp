#include "cli/serve_run.hpp"

#include "cli/host_clock.hpp"
#include "cli/shim_verdict.hpp"

#include "cli/decode_batch.hpp"
#include "cli/pipeline.hpp"
#include "cli/plan_option.hpp"
#include "cli/run_stages.hpp"
#include "engine/error.hpp"
#include "engine/fit/fit.hpp"
#include "engine/lower/lower.hpp"
#include "engine/lower/pack_cache.hpp"
#include "engine/program/program_set.hpp"
#include "engine/program/validate.hpp"
#include "engine/shim/check.hpp"
#include "engine/verify/verify.hpp"
#include "models/checkpoint_digest.hpp"
#include "models/model.hpp"
#include "sim/system/system.hpp"
#include "traces/report/run_facts.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace cardsim::cli {
namespace {

/// The index of the io output with `role`, or none.
std::optional<std::size_t> output_of(const program::Loaded& c, program::IoRole role) {
    auto* e = c.program.host.entry(role);
    if (!e) return std::nullopt;
    for (std::size_t i = 0; i < c.io.graph_outputs(); ++i)
        if (c.io.outputs[i].first == graph::Val{e->value}) return i;
    return std::nullopt;
}

} // namespace

namespace {

/// What a served trace runs on: the set's programs (bucket 0 with the DDR image), the checkpoint and
/// its graph when they were read (compiling here, or a set with --model), and what the scheduler
/// needs of the card.
struct Prepared {
    std::vector<program::Loaded>
        programs; ///< under a plan: the last card's, naming the whole graph's outputs
    std::vector<std::vector<program::Loaded>> cards; ///< under a plan: each card's set
    std::optional<models::Model> model;
    std::optional<models::BuiltGraph> built;
    serve::Capacity capacity;
};

/// The decoder in `model`, or cardsim::Error naming `dir`.
const models::DecoderSpec& decoder_of(const models::Model& model, const std::filesystem::path& dir) {
    auto* decoder = std::get_if<models::DecoderSpec>(&model.spec);
    if (!decoder)
        throw Error(
            fmt::format("{}: serve runs decoders (an encoder has no sequences to batch)", dir.string()));
    return *decoder;
}

/// Loads the checkpoint, checks the card runs it, and lowers the set of buckets (1, 2, 4, … token
/// rows up to the token budget) on as many slots as may be admitted at once.
Prepared prepare_from_model(const ServeRequest& req, ServeReport& rep) {
    Stopwatch watch;
    Prepared p;
    const auto& dir = *req.model_dir;
    // Without --check the serve is timing-only: it never reads a weight, whatever the directory holds.
    p.model = models::load_model(dir, req.shapes_only || !req.check);
    auto& model = *p.model;
    const auto& decoder = decoder_of(model, dir);
    if (req.check && model.checkpoint.shapes_only())
        throw Error(fmt::format("{}: --check computes on the weights, and the checkpoint has shapes only",
                                dir.string()));
    rep.model = models::describe(model.spec);
    p.built = models::build_graph(model);
    rep.host_load = watch.lap();
    const auto& g = p.built->graph;
    require_card_runs(g, req.config, dir);
    std::size_t need = 1;
    for (auto& r : req.requests)
        need = std::max(need, r.prompt_tokens + r.output_tokens - 1);
    rep.max_positions = req.max_positions.value_or(need);
    if (rep.max_positions == 0) throw Error("--max-positions 0: a slot must hold at least one position");
    const auto target = lower::target_of(req.config);
    lower::Options o;
    o.max_positions = rep.max_positions;
    o.model = rep.model;
    o.checkpoint_digest = models::checkpoint_digest(model.checkpoint);
    o.pack_cache = req.pack_cache;                                   // --pack-cache, CARDSIM_PACK_CACHE
    o.pack_cache_limit = lower::pack_cache_limit_from_environment(); // CARDSIM_PACK_CACHE_MAX
    o.shapes_only = model.checkpoint.shapes_only();

    // The buckets: 1, 2, 4, … token rows up to the token budget (the budget itself the largest),
    // each a slotted decoder bucket (any mix of decode rows and prefill chunks of the slots).
    const std::size_t budget = req.policy.token_budget;
    if (budget == 0) throw Error("--token-budget 0: a step must hold at least one token row");
    std::vector<graph::Bucket> buckets;
    for (std::size_t rows = 1; rows < budget; rows *= 2)
        buckets.push_back(graph::Bucket{rows, 1, 0});
    buckets.push_back(graph::Bucket{budget, 1, 0});
    for (auto& b : buckets)
        rep.buckets.push_back(b.tokens);

    // The slots the card's DDR holds beside the weights, io and programs of the set, from the
    // lowering's own placement; the stores are laid out for as many as may be admitted at once.
    o.bucket = buckets.front();
    // Under a plan each card holds its part's stores: the slots are the fewest any card holds.
    std::optional<PlanParts> parts;
    if (!req.plan.one()) parts = plan_parts(req.plan, model, g, req.config);
    auto for_card = [&](std::size_t k) {
        auto ok = o;
        ok.stage = parts->stages[k];
        return ok;
    };
    lower::SlotCapacity room;
    if (!parts)
        room = lower::slot_capacity(g, model.checkpoint, target, o, buckets);
    else
        for (std::size_t k = 0; k < parts->stages.size(); ++k) {
            lower::SlotCapacity mine;
            try { // named by its card, as check and compile name it
                mine =
                    lower::slot_capacity(parts->graph_of(k), model.checkpoint, target, for_card(k), buckets);
            } catch (const Refusal& r) {
                throw Refusal(fmt::format("card {} of {}: {}", k, parts->stages.size(), r.what()));
            }
            if (k == 0 || mine.slots < room.slots) room = mine;
        }
    rep.slot_bytes = room.per_slot;
    rep.slots = std::size_t(room.slots);
    rep.ddr_fixed_bytes = rep.ddr_capacity_bytes - room.free;
    // A pipeline's lanes (one a stage) each hold up to the budget's sequences.
    const std::size_t at_once = budget * req.plan.stages;
    const std::size_t admit =
        std::min({rep.slots, at_once, req.policy.max_seqs ? req.policy.max_seqs : at_once});
    p.capacity = serve::Capacity{rep.buckets, rep.slots, rep.max_positions, decoder.vocab};
    rep.laid_out = std::max<std::size_t>(1, admit);
    o.slots = rep.laid_out;
    if (parts) {
        bool cached = true;
        for (std::size_t k = 0; k < parts->stages.size(); ++k) {
            std::vector<lower::Compiled> set;
            try {
                set = lower::lower_set(parts->graph_of(k), model.checkpoint, target, for_card(k), buckets);
            } catch (const Refusal& r) {
                throw Refusal(fmt::format("card {} of {}: {}", k, parts->stages.size(), r.what()));
            }
            cached = cached && set.front().packed_from_cache;
            p.cards.emplace_back(std::make_move_iterator(set.begin()), std::make_move_iterator(set.end()));
        }
        // The last card's set names the whole graph's outputs (the host reads them, --check checks
        // them); the copy carries no weights.
        for (auto& l : p.cards.back()) {
            program::Loaded mine{l.program, {}, l.io};
            if (req.plan.tensor > 1) name_whole_graph_outputs(mine, g);
            p.programs.push_back(std::move(mine));
        }
        rep.host_weights = stages::weights_from(o, cached);
        return p;
    }
    auto set = lower::lower_set(g, model.checkpoint, target, o, buckets);
    const bool cached = set.front().packed_from_cache; // the set's weights are its first bucket's
    for (auto& c : set)
        p.programs.push_back(std::move(c));
    rep.host_weights = stages::weights_from(o, cached);
    return p;
}

/// Reads a program set and its image (PROG.ddr), checking it was compiled for `req.config`; with
/// `req.model_dir`, also reads the checkpoint it was compiled from (for --check).
Prepared prepare_from_set(const ServeRequest& req, ServeReport& rep) {
    Prepared p;
    const auto& path = *req.program;
    if (!req.plan.one())
        throw Error(fmt::format("--plan {}: {} is a set for one card (compile --rows compiles for one); "
                                "serve the checkpoint under the plan",
                                lower::name(req.plan), path.string()));
    if (req.shapes_only)
        throw Error("--shapes-only reads a checkpoint's config.json; a program set was compiled already");
    auto set = program::read_set(path);
    auto image_path = std::filesystem::path(path.string() + ".ddr");
    if (!std::filesystem::exists(image_path))
        throw Error(fmt::format("{}: the set's DDR image {} is missing (cardsim compile writes it beside the "
                                "set)",
                                path.string(), image_path.string()));
    auto& first = set.buckets.front();
    if (first.config_digest != card::digest(req.config))
        throw Error(
            fmt::format("{}: the set was compiled for the card config with digest {:016x}, this run's config "
                        "has digest {:016x} (serve it with the --config, --set and --knob it was compiled "
                        "with)",
                        path.string(), first.config_digest, card::digest(req.config)));
    for (std::size_t k = 0; k < set.buckets.size(); ++k)
        program::validate(set.buckets[k], &req.config, fmt::format("{} (bucket {})", path.string(), k));
    const auto& h = first.host;
    rep.model = h.model;
    rep.max_positions = std::size_t(h.max_positions);
    if (req.max_positions && *req.max_positions != rep.max_positions)
        throw Error(fmt::format("--max-positions {}: {} was compiled for slots of {} positions",
                                *req.max_positions, path.string(), rep.max_positions));
    rep.slots = rep.laid_out = std::size_t(h.entry(program::IoRole::Slots)->width);
    std::uint64_t stores = 0, fixed = 0;
    for (auto kind : {program::Region::Caches, program::Region::State})
        if (auto* r = first.region(kind); r) stores += r->size;
    for (auto kind : {program::Region::Weights, program::Region::Io})
        if (auto* r = first.region(kind); r && r->space == program::Space::Ddr) fixed += r->size;
    for (auto& b : set.buckets) {
        rep.buckets.push_back(std::size_t(b.host.tokens));
        if (auto* r = b.region(program::Region::Program); r) fixed += r->size;
    }
    rep.slot_bytes = stores / (rep.slots + 1); // the pad slot besides the sequences'
    rep.ddr_fixed_bytes = fixed;
    if (req.check) {
        if (!req.model_dir)
            throw Error(fmt::format("--check: give the checkpoint {} was compiled from (--model DIR): the "
                                    "golden executor computes on its weights",
                                    path.string()));
        p.model = models::load_model(*req.model_dir, false);
        decoder_of(*p.model, *req.model_dir);
        if (p.model->checkpoint.shapes_only())
            throw Error(fmt::format("{}: --check computes on the weights, and the checkpoint has shapes only",
                                    req.model_dir->string()));
        if (auto have = models::checkpoint_digest(p.model->checkpoint); have != h.checkpoint_digest)
            throw Error(
                fmt::format("{}: the set was compiled from the checkpoint with digest {:016x}, and {} has "
                            "digest {:016x}: it is another checkpoint",
                            path.string(), h.checkpoint_digest, req.model_dir->string(), have));
        p.built = models::build_graph(*p.model);
    }
    auto image = program::read_image(image_path);
    if (req.check && first.region(program::Region::Weights)->size > 0 && image.chunks.empty())
        throw Error(fmt::format("{}: its DDR image holds no weights (compiled with --shapes-only): --check "
                                "computes on them",
                                image_path.string()));
    p.capacity = serve::Capacity{rep.buckets, rep.slots, rep.max_positions, std::size_t(h.vocab)};
    p.capacity.slots_limit = "set's slots";
    rep.from_set = true;
    // Bucket 0 carries the DDR image; the card loads that one (the set shares it).
    for (std::size_t k = 0; k < set.buckets.size(); ++k) {
        if (k == 0) {
            p.programs.push_back(program::load(std::move(set.buckets[0]), std::move(image), path.string(),
                                               image_path.string()));
        } else {
            program::Loaded l;
            l.io = program::io_map(set.buckets[k].host);
            l.program = std::move(set.buckets[k]);
            p.programs.push_back(std::move(l));
        }
    }
    return p;
}

} // namespace

ServeReport serve_model(const ServeRequest& req) {
    ServeReport rep;
    if (!req.model_dir && !req.program)
        throw Error("serve: give a checkpoint directory or a program set (cardsim serve MODEL_DIR, or PROG)");
    if (req.check && req.plan.tensor > 1 && req.config.system.exchange != card::Exchange::Exact)
        throw Error("--check: the f32 exchange (system.exchange = f32) adds the cards' rounded parts in ring "
                    "order, which is not the one-card contract the check holds a step to; serve it without "
                    "--check, or with system.exchange = exact");
    rep.ddr_capacity_bytes = std::uint64_t(req.config.ddr.channels) * req.config.ddr.channel_bytes();
    auto policy = req.policy;
    Stopwatch watch;
    auto prepared = req.program ? prepare_from_set(req, rep) : prepare_from_model(req, rep);
    const double prepared_seconds = watch.lap();
    if (req.program)
        rep.host_load = prepared_seconds; // the set is read, not compiled
    else
        rep.host_compile = prepared_seconds - rep.host_load;
    if (req.program && req.default_budget) policy.token_budget = rep.buckets.back();
    // A pipeline's stages step a lane of sequences each at once (its microbatches).
    const std::size_t lanes = req.plan.stages;
    serve::Scheduler scheduler(req.requests, policy, prepared.capacity, lanes);
    auto& programs = prepared.programs;
    auto next_out = output_of(programs.front(), program::IoRole::Next);
    if (!next_out) throw Error("serve: the program has no next-token output");
    const auto pad = std::uint32_t(programs.front().io.pad_slot());

    // --check: every step's inputs and bucket, for the bit-exact check after the run
    std::vector<graph::BatchInputs> inputs;
    std::vector<std::size_t> step_buckets;
    std::optional<serve::Step> running;
    double running_start = 0;
    std::size_t rows_run = 0, padded = 0, step_count = 0;
    double busy = 0;
    // Without data, each bucket's Moe layers route by the routing model (none without experts).
    const auto routing = graph::RoutingModel::parse(req.routing, req.routing_seed);
    std::vector<std::vector<graph::RouterShape>> routers;
    for (std::size_t b = 0; b < programs.size(); ++b) {
        std::size_t rows = 0;
        routers.push_back(stages::routers_of(programs[b].program, rows));
        for (auto& card : prepared.cards) { // under a plan, each Moe layer's router on its card
            auto mine = stages::routers_of(card[b].program, rows);
            if (routers[b].size() < mine.size()) routers[b].resize(mine.size());
            for (std::size_t r = 0; r < mine.size(); ++r)
                if (mine[r].experts) routers[b][r] = mine[r];
        }
    }
    if (req.routing_given && routers.front().empty())
        throw Error(fmt::format("--routing {}: the model has no Moe layer, so nothing routes (drop it)",
                                req.routing));
    if (req.routing_seed_given && routers.front().empty())
        throw Error("--routing-seed: the model has no Moe layer, so nothing routes (drop it)");
    sim::SessionPlan plan;
    plan.mode = req.check ? sim::Mode::Full : sim::Mode::TimingOnly;
    plan.keep_records = false;
    // The tokens a step's rows got (a full run's arg-max; none timing-only).
    auto tokens_of = [&](const serve::Step& s, const sim::StepOutputs* out) {
        std::vector<std::uint32_t> tokens;
        if (req.check && out) {
            auto& next = out->values[*next_out];
            for (std::size_t r = 0; r < s.rows.size(); ++r)
                tokens.push_back(row_token(next, r));
        }
        return tokens;
    };
    // The session step of scheduler step `s` (the `step`-th issued).
    auto session_step = [&](std::size_t step, const serve::Step& s) {
        sim::SessionStep st;
        st.bucket = s.bucket;
        st.not_before_seconds = s.not_before_seconds;
        // The step's rows in order, then padding rows up to the bucket's: token 0 at position 0 of
        // the pad slot, whose stores no sequence reads.
        const std::size_t rows = rep.buckets[s.bucket];
        for (auto& r : s.rows) {
            st.inputs.ids.push_back(r.id);
            st.inputs.positions.push_back(r.position);
            st.inputs.slots.push_back(r.slot);
        }
        st.inputs.ids.resize(rows, 0);
        st.inputs.positions.resize(rows, 0);
        st.inputs.slots.resize(rows, pad);
        if (!req.check && !routers[s.bucket].empty())
            st.inputs.routing = routing.step(step, routers[s.bucket], rows);
        rows_run += s.rows.size();
        padded += rows - s.rows.size();
        ++step_count;
        if (req.check) {
            inputs.push_back(st.inputs);
            step_buckets.push_back(s.bucket);
        }
        if (req.progress) fmt::print(stderr, "\rstep {}", step + 1);
        return st;
    };
    plan.next = [&](std::size_t step, double now,
                    const sim::StepOutputs* previous) -> std::optional<sim::SessionStep> {
        if (running) {
            scheduler.done(running_start, now, tokens_of(*running, previous));
            busy += now - running_start;
            running.reset();
        }
        auto s = scheduler.next(now);
        if (!s) return std::nullopt;
        running = s;
        running_start = std::max(now, s->not_before_seconds);
        return session_step(step, *s);
    };
    // Lanes: each lane's step in flight, its start; the busy time is the union of the steps' spans.
    std::vector<std::optional<serve::Step>> in_lane(lanes);
    std::vector<double> lane_start(lanes, 0.0);
    double busy_until = 0;
    std::size_t issued = 0;
    plan.lanes = lanes;
    plan.next_in = [&](std::size_t lane, double now) -> std::optional<sim::SessionStep> {
        auto s = scheduler.next_in(now, lane);
        if (!s) return std::nullopt;
        in_lane[lane] = s;
        lane_start[lane] = now;
        return session_step(issued++, *s);
    };
    plan.lane_done = [&](std::size_t lane, double end, const sim::StepOutputs& out) {
        scheduler.done_in(lane, end, tokens_of(*in_lane[lane], &out));
        busy += std::max(0.0, end - std::max(lane_start[lane], busy_until));
        busy_until = std::max(busy_until, end);
        in_lane[lane].reset();
    };
    plan.idle_until = [&] { return scheduler.idle_until(); };
    std::optional<sim::system::SystemResult> system;
    if (!prepared.cards.empty()) {
        system = sim::system::simulate(req.config, prepared.cards, plan);
        rep.run = sim::system::whole(*system);
        rep.cards = system->cards.size();
        rep.system = fmt::format("system: {} cards, {} plan, {} of links at {} Gb/s a port, {} ns a hop\n",
                                 rep.cards, lower::name(req.plan), card::name(req.config.system.topology),
                                 req.config.link.gbps, req.config.link.latency_ns);
        for (auto& l : system->links) {
            if (!l.messages) continue;
            rep.link_bytes += l.bytes;
            const double use = system->seconds > 0 ? l.busy_seconds / system->seconds : 0.0;
            rep.system += fmt::format("  link {} -> {}: {} messages, {:.3f} MB, busy {:.2f} % of the run\n",
                                      sim::system::node_name(l.from, req.config),
                                      sim::system::node_name(l.to, req.config), l.messages,
                                      double(l.bytes) / 1e6, 100 * use);
        }
        rep.link_utilisation = system->seconds > 0 ? busiest_link_seconds(*system) / system->seconds : 0.0;
    } else
        rep.run = sim::simulate(req.config, programs, plan);
    if (req.progress) fmt::print(stderr, "\r{:40}\r", "");
    rep.summary = serve::summarise(scheduler, step_count, busy, rows_run, padded);
    rep.times = scheduler.times();
    const DdrTraffic traffic = ddr_traffic(rep.run);
    rep.ddr_bytes += traffic.total();
    // The DRAM's peak, or what the user ports carry of this run's reads and writes if less.
    rep.peak_bytes_per_second = req.config.ddr_peak_bytes_per_second(
        double(traffic.read), double(traffic.write), double(rep.cards) * req.config.ddr.channels);
    rep.host_seconds = rep.run.host_seconds;
    watch.lap();
    if (req.check && !rep.run.fault) {
        // Every step's outputs against the golden executor's on the same inputs, bit for bit.
        std::vector<verify::Readback> readback;
        for (auto& out : rep.run.outputs)
            readback.push_back(out.values);
        auto v = verify::verify(prepared.built->graph, prepared.model->checkpoint, req.config, programs,
                                step_buckets, inputs, readback);
        rep.bit_exact = v.bit_exact();
        if (v.first) rep.mismatch = v.first->text();
        rep.host_golden = watch.lap();
    }
    rep.fit = fit::check_fit(req.config);
    rep.watts = run_watts(req.config, rep.run, system ? &*system : nullptr);
    rep.host_total = process_seconds();
    return rep;
}

std::string ServeReport::text() const {
    std::string o = fmt::format("model: {}\n", model);
    std::string b;
    for (auto n : buckets)
        b += fmt::format("{}{}", b.empty() ? "" : ",", n);
    if (from_set)
        o += fmt::format("card: buckets of {} token rows on {} store slots of {} positions as compiled ({} a "
                         "slot) beside {} of weights, io and programs\n",
                         b, laid_out, max_positions, lower::gib(slot_bytes), lower::gib(ddr_fixed_bytes));
    else
        o += fmt::format(
            "{}: buckets of {} token rows on {} store slots; {} DDR holds {} slots of {} positions "
            "({} a slot) beside {} of weights, io and programs\n",
            cards > 1 ? "cards" : "card", b, laid_out, cards > 1 ? "the fullest card's" : "its", slots,
            max_positions, lower::gib(slot_bytes), lower::gib(ddr_fixed_bytes));
    o += system;
    if (run.fault) o += fmt::format("FAULT: {}\n", *run.fault);
    o += serve::text(summary);
    o += fmt::format(
        "DDR: {:.3f} GB moved, {:.1f} % of the peak over the busy time\n", double(ddr_bytes) / 1e9,
        summary.busy_seconds > 0 ? 100 * double(ddr_bytes) / peak_bytes_per_second / summary.busy_seconds
                                 : 0.0);
    if (bit_exact)
        o += fmt::format("bit-exact: {}{}\n", *bit_exact ? "yes" : "no",
                         mismatch.empty() ? "" : ": " + mismatch);
    o += fmt::format(
        "host: {:.2f} s in all: load {:.2f} s, compile {:.2f} s{}, simulation {:.2f} s for {:.6f} s "
        "simulated ({:.1f} host seconds a simulated second){}, outputs {:.2f} s\n",
        host_total, host_load, host_compile, traces::report::weights_phrase(host_weights), host_seconds,
        run.seconds, run.seconds > 0 ? host_seconds / run.seconds : 0.0,
        bit_exact ? fmt::format(", golden {:.2f} s", host_golden) : "", host_outputs);
    return o;
}

std::string ServeReport::machine() const {
    std::string o;
    auto kv = [&](std::string_view k, auto v) { o += fmt::format("{}={}\n", k, v); };
    kv("cycles", run.cycles);
    kv("seconds", run.seconds);
    kv("tokens_per_second", summary.tokens_per_second);
    kv("ddr_bytes", ddr_bytes);
    kv("bandwidth_gbs", summary.busy_seconds > 0 ? double(ddr_bytes) / summary.busy_seconds / 1e9 : 0.0);
    kv("roofline_fraction",
       summary.busy_seconds > 0 ? double(ddr_bytes) / peak_bytes_per_second / summary.busy_seconds : 0.0);
    for (auto& [name, b] : run.unit_busy)
        if (b) kv(fmt::format("busy_{}", name), run.cycles ? double(b) / double(run.cycles) : 0.0);
    kv("dsp", fit.table.total.dsps);
    kv("alm", fit.table.total.alms);
    kv("m20k", fit.table.total.m20ks);
    kv("fmax_mhz", fit.clock.fmax_mhz);
    kv("watts", watts);
    kv("tokens_per_joule", watts > 0 ? summary.tokens_per_second / watts : 0.0);
    kv("fits", fit.fits() ? "yes" : "no");
    kv("served_from", from_set ? "set" : "checkpoint");
    if (cards > 1) {
        kv("cards", cards);
        kv("link_bytes", link_bytes);
        kv("link_utilisation", link_utilisation);
    }
    kv("slots", slots);
    kv("slots_laid_out", laid_out);
    kv("slot_bytes", slot_bytes);
    kv("ddr_fixed_bytes", ddr_fixed_bytes);
    kv("ddr_capacity_bytes", ddr_capacity_bytes);
    kv("max_positions", max_positions);
    kv("bit_exact", bit_exact ? (*bit_exact ? "yes" : "no") : "unchecked");
    kv("mismatch", mismatch);
    if (run.fault) kv("fault", *run.fault);
    kv("host_seconds", host_seconds);
    kv("host_total_seconds", host_total);
    kv("host_load_seconds", host_load);
    kv("host_compile_seconds", host_compile);
    kv("host_compile_weights", host_weights);
    kv("host_simulation_seconds", host_seconds);
    kv("host_golden_seconds", bit_exact ? fmt::format("{}", host_golden) : ""); // empty: no --check
    kv("host_outputs_seconds", host_outputs);
    o += serve::machine(summary);
    return o;
}

} // namespace cardsim::cli
