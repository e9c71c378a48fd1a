#include "cli/run_stages.hpp"

#include "cli/check_layers.hpp"
#include "cli/child_process.hpp"
#include "cli/plan_option.hpp"
#include "cli/report_facts.hpp"
#include "cli/shim_verdict.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/lower/lower.hpp"
#include "engine/lower/pack_cache.hpp"
#include "engine/program/program.hpp"
#include "engine/program/slots.hpp"
#include "engine/program/validate.hpp"
#include "models/checkpoint_digest.hpp"
#include "models/reference.hpp"
#include "sim/rtl/rtl_matvec.hpp"
#include "sim/units/unit_set.hpp"
#include "traces/csv.hpp"
#include "traces/from_run.hpp"
#include "traces/perfetto.hpp"
#include "traces/report/run_page.hpp"
#include "traces/vcd.hpp"
#include "traces/writer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>

namespace cardsim::cli::stages {

std::vector<graph::RouterShape> routers_of(const program::Program& p, std::size_t& rows) {
    std::vector<graph::RouterShape> out;
    for (const auto& c : p.commands) {
        if (c.opcode != program::Opcode::Route) continue;
        const auto d = program::args<program::slots::Route>(c).dims;
        if (d.router >= out.size()) out.resize(d.router + 1);
        out[d.router] = {d.experts, d.top_k};
        rows = d.rows;
    }
    return out;
}

std::string weights_from(const lower::Options& options, bool from_cache) {
    return options.shapes_only ? "none" : from_cache ? "cache" : "packed";
}

std::vector<graph::RouterShape> routers_of(const Compiled& c, std::size_t& rows) {
    if (c.cards.empty()) return routers_of(c.program.program, rows);
    return routers_of(c.cards, rows);
}

std::vector<graph::RouterShape> routers_of(std::span<const program::Loaded> cards, std::size_t& rows) {
    if (cards.size() == 1) return routers_of(cards.front().program, rows);
    std::vector<graph::RouterShape> out;
    for (const auto& card : cards) {
        auto mine = routers_of(card.program, rows);
        if (out.size() < mine.size()) out.resize(mine.size());
        for (std::size_t r = 0; r < mine.size(); ++r)
            if (mine[r].experts) out[r] = mine[r];
    }
    return out;
}

/// How a run routes without data: the request's model (none given: uniform) for a timing-only
/// run of a model with experts (`shapes`, routing `rows` rows), else nothing (a full run's routes choose).
std::function<graph::StepRouting(std::size_t)>
routing_of(const RunRequest& req, std::vector<graph::RouterShape> shapes, std::size_t rows) {
    if (req.routing && shapes.empty())
        throw Error(fmt::format("--routing {}: the model has no Moe layer, so nothing routes (drop it)",
                                *req.routing));
    if (req.routing_seed_given && shapes.empty())
        throw Error("--routing-seed: the model has no Moe layer, so nothing routes (drop it)");
    if (req.mode != sim::Mode::TimingOnly || shapes.empty())
        return [](std::size_t) { return graph::StepRouting{}; };
    auto model = graph::RoutingModel::parse(req.routing.value_or("uniform"), req.routing_seed);
    return [model = std::move(model), shapes = std::move(shapes), rows](std::size_t step) {
        return model.step(step, shapes, rows);
    };
}

namespace {

std::vector<float> floats(const std::vector<std::byte>& b) {
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), 4 * f.size());
    return f;
}

/// The index of a graph output in the io map, or none.
std::optional<std::size_t> output_index(const program::Loaded& c, std::optional<graph::Val> v) {
    if (!v) return std::nullopt;
    for (std::size_t i = 0; i < c.io.graph_outputs(); ++i)
        if (c.io.outputs[i].first == *v) return i;
    return std::nullopt;
}

/// The index of the io output with `role` in the host map, or none.
std::optional<std::size_t> output_index(const program::Loaded& c, program::IoRole role) {
    auto* e = c.program.host.entry(role);
    return e ? output_index(c, graph::Val{e->value}) : std::nullopt;
}

/// Reads the program at `path` and its image beside it, checking it was compiled for `config`.
/// Refuses program `path` (its host map `h`) unless it was compiled as card `card` of `plan`: a card
/// of another plan, another card's program or a card of a system run alone would run without error
/// and compute something else, or stop on a bus error mid-run.
void check_system(const std::filesystem::path& path, const program::Host& h, const lower::Plan& plan,
                  std::size_t card) {
    const lower::Plan compiled{h.tensor, h.stages, h.experts};
    const auto what = [](const lower::Plan& p) {
        return p.one() ? std::string("one card")
                       : fmt::format("--plan {} over {} cards", lower::name(p), p.cards());
    };
    if (compiled == plan && h.card == card) return;
    if (compiled.one())
        throw Error(
            fmt::format("{}: a program for one card; this run is {} (compile with that plan, or run it "
                        "without --plan)",
                        path.string(), what(plan)));
    if (compiled == plan)
        throw Error(
            fmt::format("{}: compiled as card {} of {}, and it stands for card {} here (compile again)",
                        path.string(), h.card, what(plan), card));
    throw Error(fmt::format("{}: compiled as card {} of {}; this run is {} (run the programs with the plan "
                            "and system.cards they were compiled with, or compile again)",
                            path.string(), h.card, what(compiled), plan.one() ? "on one card" : what(plan)));
}

program::Loaded read_program(const std::filesystem::path& path, const card::CardConfig& config) {
    auto p = program::read(path);
    auto image_path = std::filesystem::path(path.string() + ".ddr");
    if (!std::filesystem::exists(image_path))
        throw Error(fmt::format("{}: the program's DDR image {} is missing (cardsim compile writes it beside "
                                "the program)",
                                path.string(), image_path.string()));
    auto image = program::read_image(image_path);
    if (p.config_digest != card::digest(config))
        throw Error(
            fmt::format("{}: the program was compiled for the card config with digest {:016x}, this run's "
                        "config has digest {:016x} (run it with the --config, --set and --knob it was "
                        "compiled with)",
                        path.string(), p.config_digest, card::digest(config)));
    program::validate(p, &config, path.string());
    return program::load(std::move(p), std::move(image), path.string(), image_path.string());
}

/// Names the packed matrices of `p`'s image (read from a file, it has none) by where a shapes-only
/// lowering of `g` for the program's bucket places them: lowering places weights by their shapes
/// alone. The golden executor then checks the image's bytes against its own packing and reads
/// them in place, rather than packing a second copy of the weights. A placement that differed
/// would only cost that copy back: the golden executor checks every matrix before it trusts it.
void name_matrices(program::Loaded& p, const models::Model& model, const graph::Graph& g,
                   const card::CardConfig& config) {
    const auto& h = p.program.host;
    lower::Options o{graph::Bucket{h.tokens, h.seqs, h.markers}, h.max_positions};
    o.shapes_only = true;
    if (p.io.slot_count) o.slots = p.io.slot_count;
    try {
        p.image.matrices = lower::lower(g, model.checkpoint, lower::target_of(config), o).image.matrices;
    } catch (const Error&) {
        // Not lowerable alone (a program of a set, say): the golden executor packs its own.
    }
}

/// Checks that `c` (read from `path`) was compiled from the checkpoint in `model_dir`, whose digest
/// is `have` (not checked when not given: a timing-only run reads no weight, and its times do not
/// depend on their values), and its graph `g`.
void check_compiled_from(const program::Loaded& c, const std::filesystem::path& path,
                         const std::filesystem::path& model_dir, std::optional<std::uint64_t> have,
                         const graph::Graph& g) {
    const auto want = c.program.host.checkpoint_digest;
    if (have && want != *have)
        throw Error(
            fmt::format("{}: the program was compiled from the checkpoint with digest {:016x}, and {} has "
                        "digest {:016x}: it is another checkpoint",
                        path.string(), want, model_dir.string(), *have));
    auto outputs = g.outputs();
    bool same = outputs.size() == c.io.graph_outputs();
    for (std::size_t i = 0; same && i < outputs.size(); ++i)
        same = outputs[i] == c.io.outputs[i].first;
    for (auto& p : c.io.probes)
        same = same && !graph::check(g, p);
    if (!same)
        throw Error(fmt::format("{}: its io map does not match the graph cardsim builds from {} (compiled by "
                                "another version of cardsim? compile it again)",
                                path.string(), model_dir.string()));
}

/// The accuracy of a decode batch's logits: each sequence's rows against the f64 reference of that
/// sequence alone, combined (the largest error; top-1 agreement and KL averaged over every
/// sequence's measured steps).
models::Accuracy batch_accuracy(const models::Model& model, const sim::RunResult& run, std::size_t logits_out,
                                const DecodeBatch& batch) {
    models::Accuracy all;
    double top1 = 0, kl = 0;
    for (std::size_t q = 0; q < batch.seqs(); ++q) {
        std::vector<std::vector<float>> logits;
        for (auto& o : run.outputs) {
            auto f = floats(o.values[logits_out]);
            const std::size_t w = f.size() / batch.seqs();
            logits.emplace_back(f.begin() + std::ptrdiff_t(q * w), f.begin() + std::ptrdiff_t((q + 1) * w));
        }
        auto a = models::accuracy(model, logits, batch.tokens(q), batch.prompt(q).size(), {});
        all.max_abs_error =
            std::isnan(a.max_abs_error) ? a.max_abs_error : std::max(all.max_abs_error, a.max_abs_error);
        top1 += a.top1_agreement * double(a.steps);
        kl += a.kl * double(a.steps);
        all.steps += a.steps;
    }
    if (all.steps) {
        all.top1_agreement = top1 / double(all.steps);
        all.kl = kl / double(all.steps);
    }
    return all;
}

/// The prefill of a prompt of `request.prompt_len` tokens in `chunks` steps of `request.chunk`
/// tokens of one sequence (positions from 0; the last chunk's rows past the prompt are timed too,
/// as a fixed bucket runs them), simulated in a child process on a program compiled for that
/// bucket with `decode_options`' caches: one card's, or under a plan every card's (the system
/// steps as a decode step does).
Phase prefill_phase(const RunRequest& req, const models::Model& model, const graph::Graph& g,
                    const lower::Options& decode_options, std::size_t chunks) {
    return parse_phase(in_child([&] {
        lower::Options o = decode_options;
        o.bucket = graph::Bucket{req.chunk, 1, 0};
        std::vector<program::Loaded> cards;
        try {
            if (req.plan.one())
                cards.push_back(lower::lower(g, model.checkpoint, lower::target_of(req.config), o));
            else
                for (auto& card : lower_plan(req.plan, model, g, req.config, o).cards)
                    cards.push_back(std::move(card));
        } catch (const Error& e) {
            throw Error(fmt::format("the prefill program for --chunk {}: {}", req.chunk, e.what()));
        }
        std::size_t rows = 0;
        auto shapes = routers_of(cards, rows);
        const auto routing = routing_of(req, std::move(shapes), rows);
        sim::RunPlan plan;
        plan.steps = chunks;
        plan.lag = chunks; // a chunk's inputs read no outputs: a pipeline of cards overlaps the chunks
        plan.mode = sim::Mode::TimingOnly;
        plan.inputs = [&](std::size_t s, const sim::StepOutputs*) {
            graph::BatchInputs in;
            in.ids.assign(req.chunk, 0);
            for (std::size_t i = 0; i < req.chunk; ++i)
                in.positions.push_back(std::uint32_t(s * req.chunk + i));
            in.seq_starts = {0, std::uint32_t(req.chunk)};
            in.routing = routing(s);
            if (req.progress) fmt::print(stderr, "\rprefill chunk {}/{}", s + 1, chunks);
            return in;
        };
        double link_seconds = 0;
        sim::RunResult run;
        if (req.plan.one()) {
            run = sim::simulate(req.config, cards.front(), plan);
        } else {
            const auto system = sim::system::simulate(req.config, cards, plan);
            link_seconds = busiest_link_seconds(system);
            run = sim::system::whole(system);
        }
        if (run.fault) throw Error("the prefill stopped on a bus error: " + *run.fault);
        return phase_of(run, req.config, *req.prompt_len, link_seconds).encode();
    }));
}

/// A microbatched run as a run of decode steps: each step's end is its last group's, and (a full
/// run) its outputs its groups' rows joined in sequence order; the groups' own outputs are kept
/// for the bit-exact check.
void join_microbatches(Simulated& out, std::size_t micro, std::size_t steps, sim::Mode mode) {
    auto& r = out.run;
    std::vector<std::uint64_t> start, end;
    std::vector<std::size_t> bucket;
    for (std::size_t s = 0; s < steps && (s + 1) * micro <= r.step_end.size(); ++s) {
        end.push_back(*std::max_element(r.step_end.begin() + std::ptrdiff_t(s * micro),
                                        r.step_end.begin() + std::ptrdiff_t((s + 1) * micro)));
        if (s * micro < r.step_start.size()) start.push_back(r.step_start[s * micro]);
        if (s * micro < r.step_bucket.size()) bucket.push_back(r.step_bucket[s * micro]);
    }
    r.step_end = std::move(end);
    r.step_start = std::move(start);
    r.step_bucket = std::move(bucket);
    if (mode != sim::Mode::Full) return;
    out.microbatch_outputs = std::move(r.outputs);
    r.outputs.clear();
    for (std::size_t s = 0; (s + 1) * micro <= out.microbatch_outputs.size(); ++s) {
        sim::StepOutputs joined = out.microbatch_outputs[s * micro];
        for (std::size_t j = 1; j < micro; ++j)
            for (std::size_t o = 0; o < joined.values.size(); ++o) {
                const auto& more = out.microbatch_outputs[s * micro + j].values[o];
                joined.values[o].insert(joined.values[o].end(), more.begin(), more.end());
            }
        r.outputs.push_back(std::move(joined));
    }
}

} // namespace

void check_request(const RunRequest& req) {
    if (!req.model_dir && !req.program) throw Error("run: give a checkpoint directory or a program file");
    if (req.prompt_len) {
        if (!req.model_dir || req.program)
            throw Error(
                "--prompt-len: the run compiles the checkpoint twice (a prefill chunk and decode): give "
                "a checkpoint directory, not a program");
        if (req.mode != sim::Mode::TimingOnly)
            throw Error("--prompt-len N times a prompt of N tokens without their ids: pass --timing-only");
        if (*req.prompt_len == 0 || req.chunk == 0) throw Error("--prompt-len and --chunk must be positive");
        if (!req.prompt.empty()) throw Error("--prompt-len: give a prompt length or a prompt, not both");
        if (req.check_layers) throw Error("--prompt-len: layer checks need a full run");
    }
    if (req.chunk_given && !req.prompt_len)
        throw Error("--chunk: it sizes the prefill steps of --prompt-len, and there is none (give "
                    "--prompt-len N, or drop --chunk)");
    if (req.check_layers && req.mode != sim::Mode::Full)
        throw Error("--check-layers: a timing-only run computes nothing, so there are no layer outputs "
                    "to check (drop --timing-only)");
    if (!req.reference && req.mode != sim::Mode::Full)
        throw Error("--no-reference: a timing-only run computes no f64 reference anyway (drop it)");
    if (req.program && req.check_layers)
        throw Error(fmt::format("{}: a program reads back the layers it was compiled to check: pass "
                                "--check-layers to cardsim compile",
                                req.program->string()));
    if (req.program && req.pack_cache_given)
        throw Error(fmt::format("{}: a program's weights are in its image, so nothing is packed: pass "
                                "--pack-cache to cardsim compile",
                                req.program->string()));
    if (req.pack_cache_given && (req.mode != sim::Mode::Full || req.shapes_only))
        throw Error("--pack-cache: a timing-only run reads and packs no weights (drop --pack-cache, or "
                    "--timing-only)");
    if (req.program && req.max_positions)
        throw Error(fmt::format("{}: a program's caches hold the positions it was compiled for: pass "
                                "--max-positions to cardsim compile",
                                req.program->string()));
    if (req.flip && req.mode != sim::Mode::Full)
        throw Error("--flip-bit: a timing-only run computes nothing, so there is no bit to flip (drop "
                    "--timing-only)");
    if (req.routing && req.mode == sim::Mode::Full)
        throw Error(fmt::format("--routing {}: a full run's router chooses the experts from its data (pass "
                                "--timing-only to route by a model or a trace)",
                                *req.routing));
    if (req.routing_seed_given && req.mode == sim::Mode::Full)
        throw Error(
            "--routing-seed: a full run's router chooses the experts from its data, so no routing model "
            "draws them (pass --timing-only, or drop it)");
    if (req.routing)
        (void)graph::RoutingModel::parse(*req.routing, req.routing_seed); // bad input before any work
    if (req.routing_seed_given && req.routing && req.routing->starts_with("trace:"))
        throw Error(fmt::format("--routing-seed: --routing {} replays the experts a trace chose, so no "
                                "routing model draws them (drop --routing-seed)",
                                *req.routing));
    if (req.trace_data && !req.trace)
        throw Error("--trace-data: it adds the bytes each command wrote to the --trace file, and there is "
                    "none (give --trace F, or drop --trace-data)");
    if (req.trace_data && req.mode != sim::Mode::Full)
        throw Error("--trace-data: a timing-only run computes no bytes to record (drop --timing-only, or "
                    "--trace-data)");
    if (req.program && !req.model_dir) {
        if (req.shapes_only)
            throw Error(fmt::format("--shapes-only: it reads a checkpoint's config.json alone, and {} is a "
                                    "program with its weights in its image (drop --shapes-only)",
                                    req.program->string()));
        if (!req.reference && req.mode == sim::Mode::Full)
            throw Error("--no-reference: a program alone has no checkpoint, so no f64 reference is computed "
                        "anyway (drop it, or give --model DIR)");
    }
    if (!req.plan.one()) {
        auto refuse = [&](bool given, std::string_view what) {
            if (given)
                throw Error(
                    fmt::format("--plan {}: {} is not built for a system of cards yet (docs/cards.md)",
                                lower::name(req.plan), what));
        };
        refuse(req.check_layers.has_value(), "--check-layers");
        refuse(req.flip.has_value(), "--flip-bit");
        refuse(req.rtl_matvec, "--rtl");
        refuse(req.ddr_trace.has_value(), "--ddr-trace");
    }
    if (req.rtl_matvec && req.mode != sim::Mode::Full)
        throw Error("--rtl matvec: a timing-only run computes nothing, so the RTL would not run (drop "
                    "--timing-only)");
}

Source load(const RunRequest& req) {
    Source s;
    if (req.model_dir) {
        // A timing-only run never reads a weight: it takes the shapes-only path whatever the
        // directory holds (its cycles and DDR bytes are the full run's:
        // tests/cli/shapes_only_test.cpp). With a program, a full run checks the program was
        // compiled from this checkpoint by its digest (every byte); a timing-only run, whose times
        // do not depend on the weights' values, by the graph its config builds (check_compiled_from).
        const bool timing = req.mode == sim::Mode::TimingOnly;
        s.model = models::load_model(*req.model_dir, req.shapes_only || timing);
        s.built = models::build_graph(*s.model);
        s.name = models::describe(s.model->spec);
        if (s.model->checkpoint.shapes_only() && req.mode == sim::Mode::Full)
            throw Error(fmt::format("{}: the checkpoint has shapes only ({}), no weights to compute with: a "
                                    "full run needs its safetensors; run it with --timing-only",
                                    req.model_dir->string(),
                                    req.shapes_only ? "--shapes-only" : "config.json without safetensors"));
        if (req.prompt_len && !std::holds_alternative<models::DecoderSpec>(s.model->spec))
            throw Error("--prompt-len: an encoder runs its prompt in one step (give --prompt)");
    }
    if (req.program && !req.plan.one()) {
        // A plan's programs: PROG.cardK and its image, one a card (`compile --plan` writes them).
        const auto n = req.config.system.cards;
        for (std::size_t k = 0; k <= n; ++k) {
            const std::filesystem::path path = fmt::format("{}.card{}", req.program->string(), k);
            if (k == n) {
                if (std::filesystem::exists(path))
                    throw Error(
                        fmt::format("{}: the programs were compiled for more than system.cards = {} cards",
                                    path.string(), n));
                break;
            }
            if (!std::filesystem::exists(path))
                throw Error(
                    fmt::format("{}: missing; a plan over {} cards runs one program a card, PROG.card0 .. "
                                "PROG.card{} (cardsim compile --plan writes them)",
                                path.string(), n, n - 1));
            s.cards.push_back(read_program(path, req.config));
            check_system(path, s.cards.back().program.host, req.plan, k);
        }
        // The cards of one compile: one checkpoint (a card from another compile runs without error
        // and computes nonsense).
        for (std::size_t k = 0; k + 1 < s.cards.size(); ++k)
            if (s.cards[k].program.host.checkpoint_digest != s.cards.back().program.host.checkpoint_digest)
                throw Error(fmt::format("{}.card{} was compiled from the checkpoint with digest {:016x} and "
                                        "{}.card{} from {:016x}: the cards of a plan come from one compile",
                                        req.program->string(), k, s.cards[k].program.host.checkpoint_digest,
                                        req.program->string(), n - 1,
                                        s.cards.back().program.host.checkpoint_digest));
        // What the host drives and checks is the last card's (its outputs are the system's).
        s.program = program::Loaded{s.cards.back().program, {}, s.cards.back().io};
        if (s.model && req.plan.tensor > 1) name_whole_graph_outputs(*s.program, s.built->graph);
        for (auto& card : s.cards) {
            auto* w = card.program.region(program::Region::Weights);
            if (req.mode == sim::Mode::Full && w && w->size > 0 && card.image.chunks.empty())
                throw Error(
                    fmt::format("{}.card*: their DDR images hold no weights (compiled with "
                                "--shapes-only): a full run computes on them; run it with --timing-only",
                                req.program->string()));
        }
        if (s.model)
            check_compiled_from(
                *s.program, fmt::format("{}.card{}", req.program->string(), n - 1), *req.model_dir,
                req.mode == sim::Mode::Full ? std::optional(models::checkpoint_digest(s.model->checkpoint))
                                            : std::nullopt,
                s.built->graph);
        if (!s.program->program.host.model.empty()) s.name = s.program->program.host.model;
    } else if (req.program) {
        // The checkpoint's digest (a pass over its files) is read while the program and its image
        // are (the image's digest, a pass over it): one core each. Its future waits if either throws.
        std::future<std::uint64_t> digest;
        if (s.model && req.mode == sim::Mode::Full)
            digest = std::async(
                kernels::host_threads() > 1 ? std::launch::async : std::launch::deferred,
                [&checkpoint = s.model->checkpoint] { return models::checkpoint_digest(checkpoint); });
        s.program = read_program(*req.program, req.config);
        check_system(*req.program, s.program->program.host, req.plan, 0);
        auto* weights = s.program->program.region(program::Region::Weights);
        if (req.mode == sim::Mode::Full && weights && weights->size > 0 && s.program->image.chunks.empty())
            throw Error(
                fmt::format("{}: its DDR image holds no weights (compiled with --shapes-only): a full "
                            "run computes on them; run it with --timing-only",
                            req.program->string()));
        if (s.model)
            check_compiled_from(*s.program, *req.program, *req.model_dir,
                                digest.valid() ? std::optional(digest.get()) : std::nullopt, s.built->graph);
        if (s.model && req.mode == sim::Mode::Full)
            name_matrices(*s.program, *s.model, s.built->graph, req.config);
        if (!s.program->program.host.model.empty()) s.name = s.program->program.host.model;
    }
    // A program says what it is through its host map; a checkpoint through its architecture.
    if (s.program) {
        const auto& host = s.program->program.host;
        s.decoder = host.entry(program::IoRole::Next) != nullptr;
        s.vocab = host.vocab;
    } else if (auto* d = std::get_if<models::DecoderSpec>(&s.model->spec)) {
        s.decoder = true;
        s.vocab = d->vocab;
    } else {
        s.decoder = false;
        s.vocab = std::get<models::EncoderSpec>(s.model->spec).vocab;
    }
    return s;
}

Feed feed(const RunRequest& req, const Source& s) {
    const program::Host* host = s.program ? &s.program->program.host : nullptr;
    const std::size_t vocab = s.vocab ? s.vocab : 1;
    if (host && !s.decoder && req.prompt.empty())
        throw Error(fmt::format("{}: the program runs {} tokens at once: pass --prompt with {} ids",
                                req.program->string(), host->tokens, host->tokens));
    auto prompt = req.prompt.empty() && !req.prompt_len ? default_prompt(0, vocab) : req.prompt;
    // A decoder's sequences: a program's bucket fixes how many (its rows, one token each).
    const std::size_t seqs = host && s.decoder && host->tokens == host->seqs
                                 ? host->seqs
                                 : req.seqs.value_or(1 + req.other_prompts.size());
    if (req.seqs && *req.seqs != seqs)
        throw Error(fmt::format("--seqs {}: the program {} decodes {} sequences a step", *req.seqs,
                                req.program->string(), seqs));
    if (!s.decoder && (seqs != 1 || !req.other_prompts.empty()))
        throw Error("--seqs, --prompt: an encoder run takes one sequence (one prompt)");
    if (req.prompt_len && seqs != 1)
        throw Error(fmt::format("--prompt-len with {} sequences: the prefill is timed for one sequence "
                                "(drop --seqs and the extra --prompt)",
                                seqs));
    std::vector<std::vector<std::uint32_t>> given;
    if (!req.prompt.empty()) given.push_back(req.prompt);
    given.insert(given.end(), req.other_prompts.begin(), req.other_prompts.end());
    // With a prompt length the decode steps start after the prefilled prompt, fed any id (the
    // token after the prompt: timing does not depend on it).
    if (req.prompt_len) given = {{0}};
    Feed f{
        s.decoder,
        prompt,
        seqs,
        DecodeBatch(batch_prompts(given, seqs, vocab), req.tokens, std::uint32_t(req.prompt_len.value_or(0))),
        {},
        0,
        0};
    for (std::size_t q = 0; q < f.batch.seqs(); ++q)
        for (auto t : f.batch.prompt(q))
            if (s.vocab && t >= s.vocab)
                throw Error(fmt::format("prompt token {} is past the vocabulary of {}", t, s.vocab));
    if (s.decoder) {
        f.steps = f.batch.steps(); // with a prompt length: the decode steps after the prefilled prompt
        if (!req.prompt_len) {
            f.prefill_steps = f.batch.prefill_steps();
            f.prompt = f.batch.prompt(0);
        }
    } else {
        if (req.tokens_given)
            throw Error(fmt::format("--tokens {}: an encoder runs its prompt in one step and generates no "
                                    "tokens (drop --tokens; give the prompt with --prompt)",
                                    req.tokens));
        f.markers = encoder_markers(f.prompt.size());
        f.steps = 1;
    }
    if (host && s.decoder && host->tokens != host->seqs)
        throw Error(
            fmt::format("{}: cardsim run decodes one token of each sequence a step, and the program's "
                        "bucket has {} tokens and {} sequences (compile it with --bucket seqs=S)",
                        req.program->string(), host->tokens, host->seqs));
    if (host && s.decoder && f.steps > host->max_positions)
        throw Error(fmt::format(
            "{}: the run needs {} positions (a prompt of {} and {} tokens), the program's "
            "caches hold {} (compile it with --max-positions {})",
            req.program->string(), f.steps, f.prompt.size(), req.tokens, host->max_positions, f.steps));
    if (host && !s.decoder &&
        (host->tokens != f.prompt.size() || host->seqs != 1 || host->markers != f.markers.size()))
        throw Error(fmt::format("{}: the program's bucket holds {} tokens, {} sequences and {} markers; a "
                                "prompt of {} ids needs 1 sequence of {} tokens and {} markers",
                                req.program->string(), host->tokens, host->seqs, host->markers,
                                f.prompt.size(), f.prompt.size(), f.markers.size()));
    if (!s.decoder && req.max_positions)
        throw Error("--max-positions: an encoder keeps no caches between steps");
    return f;
}

void check(const RunRequest& req, const Source& s) {
    if (s.program) return; // a program was checked when it was compiled
    require_card_runs(s.built->graph, req.config, *req.model_dir);
}

namespace {

/// The groups a pipeline steps a decode step's sequences in (RunRequest::microbatches): as given
/// (a divisor of the sequences; above 1 only under a pipeline), else the largest divisor of the
/// sequences up to the stages.
std::size_t microbatches_of(const RunRequest& req, const Feed& f) {
    return cli::microbatches_of(req.plan, f.seqs, f.decoder, req.microbatches);
}

} // namespace

Compiled compile(const RunRequest& req, Source& s, const Feed& f) {
    if (s.program) {
        if (req.microbatches.value_or(1) != 1)
            throw Error("--microbatches: a program file runs the bucket it was compiled for");
        Compiled c{std::move(*s.program), std::nullopt, {}, {}, {}, "program", {}};
        c.cards = std::move(s.cards);
        return c;
    }
    const auto& g = s.built->graph;
    const std::size_t prompt_len = req.prompt_len.value_or(0);
    const std::size_t micro = microbatches_of(req, f);
    lower::Options o;
    o.bucket =
        s.decoder ? graph::Bucket{f.seqs, f.seqs, 0} : graph::Bucket{f.prompt.size(), 1, f.markers.size()};
    if (micro > 1) { // each step a group's rows, naming their sequences' stores
        o.bucket = graph::Bucket{f.seqs / micro, f.seqs / micro, 0};
        o.slots = f.seqs;
    }
    const std::size_t chunks = (prompt_len + req.chunk - 1) / req.chunk;
    const std::size_t needed = std::max(prompt_len + f.steps, chunks * req.chunk);
    o.max_positions = s.decoder ? req.max_positions.value_or(req.prompt_len ? needed : f.steps) : 1;
    if (req.prompt_len && o.max_positions < needed)
        throw Error(fmt::format("--max-positions {}: a prompt of {} in chunks of {} and {} tokens need {}",
                                o.max_positions, prompt_len, req.chunk, f.steps, needed));
    if (s.decoder && o.max_positions < f.steps)
        throw Error(
            fmt::format("--max-positions {}: the run needs {} positions (a prompt of {} and {} tokens)",
                        o.max_positions, f.steps, f.prompt.size(), req.tokens));
    if (req.check_layers) o.probes = layer_probes(g, *req.check_layers);
    o.model = s.name;
    o.pack_cache = req.pack_cache;                                   // --pack-cache, CARDSIM_PACK_CACHE
    o.pack_cache_limit = lower::pack_cache_limit_from_environment(); // CARDSIM_PACK_CACHE_MAX
    o.shapes_only = s.model->checkpoint.shapes_only();
    // One card's program without a pack cache takes the checkpoint's digest only as a label: it is
    // read beside lowering (a pass over the checkpoint's files) and set when lowering is done.
    std::future<std::uint64_t> digest;
    if (o.pack_cache.empty() && req.plan.one() && !req.prompt_len && kernels::host_threads() > 1)
        digest = std::async(std::launch::async, [&checkpoint = s.model->checkpoint] {
            return models::checkpoint_digest(checkpoint);
        });
    else
        o.checkpoint_digest = models::checkpoint_digest(s.model->checkpoint);
    Compiled c;
    c.microbatches = micro;
    if (req.prompt_len) c.prefill = prefill_phase(req, *s.model, g, o, chunks);
    if (!req.plan.one()) {
        auto planned = lower_plan(req.plan, *s.model, g, req.config, o);
        bool cached = true;
        for (auto& card : planned.cards) {
            cached = cached && card.packed_from_cache;
            c.cards.push_back(std::move(card));
        }
        c.stages = std::move(planned.stages);
        c.parts = std::move(planned.parts);
        c.shards = std::move(planned.shards);
        c.program = c.cards.back();
        if (req.plan.tensor > 1) name_whole_graph_outputs(c.program, g);
        c.weights = weights_from(o, cached);
        return c;
    }
    auto one = [&] {
        try {
            return lower::lower(g, s.model->checkpoint, lower::target_of(req.config), o);
        } catch (...) {
            if (digest.valid()) digest.wait(); // it reads the checkpoint: never left running
            throw;
        }
    }();
    if (digest.valid()) one.options.checkpoint_digest = one.program.host.checkpoint_digest = digest.get();
    c.weights = weights_from(o, one.packed_from_cache);
    c.program = std::move(one);
    return c;
}

Simulated simulate(const RunRequest& req, const Compiled& c, Feed& f) {
    if (req.flip && (req.flip->step >= f.steps || req.flip->command >= c.program.program.commands.size()))
        throw Error(fmt::format("--flip-bit {}:{}: the run has {} steps (0..{}) of {} commands",
                                req.flip->step, req.flip->command, f.steps, f.steps - 1,
                                c.program.program.commands.size()));
    Simulated out;
    const auto next_out = output_index(c.program, program::IoRole::Next);
    // The encoder's one step: its prompt, a marker every fourth token.
    graph::BatchInputs encoder;
    if (!f.decoder) {
        encoder.ids = f.prompt;
        for (std::uint32_t t = 0; t < f.prompt.size(); ++t)
            encoder.positions.push_back(t);
        encoder.seq_starts = {0, std::uint32_t(f.prompt.size())};
        encoder.qtype = {0};
        for (auto m : f.markers)
            encoder.marker_rows.push_back(std::uint32_t(m));
        encoder.marker_starts = {0, std::uint32_t(f.markers.size())};
        out.inputs.push_back(encoder);
    }
    std::size_t router_rows = 0;
    auto shapes = routers_of(c, router_rows);
    const auto routing = routing_of(req, shapes, router_rows);
    sim::RunPlan plan;
    const std::size_t micro = c.microbatches, group = f.seqs / micro;
    plan.steps = f.steps * micro; // a step a group, the groups of a decode step in turn
    plan.lag = micro;             // a group's step reads its own previous step's outputs
    plan.mode = req.mode;
    plan.keep_data = req.trace_data;
    // Every command's record, when something reads them: the trace and its exports, or the RTL's
    // cycles beside the model's, or the VCD; else only each unit kind's totals (the summary is the same).
    plan.keep_records = req.trace || req.perfetto || req.vcd || req.csv || req.report || req.rtl_matvec;
    plan.flip = req.flip;
    plan.inputs = [&](std::size_t step, const sim::StepOutputs* prev) {
        if (!f.decoder) return encoder;
        const auto next =
            prev && next_out ? std::span(prev->values[*next_out]) : std::span<const std::byte>();
        auto in = micro == 1 ? f.batch.inputs(step, next)
                             : f.batch.inputs(step / micro, next, (step % micro) * group, group);
        in.routing = routing(step);
        if (req.mode == sim::Mode::Full) out.inputs.push_back(in); // the bit-exact check replays them
        if (req.progress) fmt::print(stderr, "\rstep {}/{}", step + 1, plan.steps);
        return in;
    };
    std::unique_ptr<sim::memory::TraceExporter> exporter;
    if (req.ddr_trace) {
        exporter = std::make_unique<sim::memory::TraceExporter>(req.ddr_trace->path, req.ddr_trace->spec,
                                                                req.config.ddr, trace_context(req.config));
        plan.ddr_observer = exporter.get();
    }
    if (req.rtl_matvec) {
        // The RTL matvec runs Matvec commands; an expert's matvec reads its rows through the expert
        // table, which the RTL does not: refused before the run rather than a bus error in it.
        for (const auto& command : c.program.program.commands)
            if (command.opcode == program::Opcode::ExpertMatvec)
                throw Error("--rtl matvec: the RTL matvec runs the card's Matvec commands, and this model's "
                            "experts run ExpertMatvec commands (their rows read through the expert table), "
                            "which it does not: drop --rtl");
        auto units = sim::units::UnitSet::standard(req.config);
        units.set(sim::rtl::rtl_matvec_unit(req.config));
        plan.units = units;
    }
    if (!c.cards.empty()) {
        out.system = sim::system::simulate(req.config, c.cards, plan);
        out.run = sim::system::whole(*out.system);
    } else
        out.run = sim::simulate(req.config, c.program, plan);
    const auto files_from = std::chrono::steady_clock::now();
    if (exporter) { // staged: renamed into place with the run's other outputs
        exporter->stage();
        out.ddr_trace = ddr_trace_text(*exporter, req.config.ddr, out.run.ddr_drained);
        out.staged.ddr = std::move(exporter);
    }
    if (req.progress) fmt::print(stderr, "\r{:40}\r", "");
    if (micro > 1) join_microbatches(out, micro, f.steps, req.mode);
    if (req.routing_out) {
        if (shapes.empty())
            throw Error(fmt::format("--routing-out {}: the model has no experts, so nothing routes",
                                    req.routing_out->string()));
        out.staged.routing.emplace(*req.routing_out);
        out.staged.routing->write(graph::routing_text(out.run.routing, shapes));
        out.staged.routing->stage();
    }
    out.outputs_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - files_from).count();
    if (f.decoder && req.mode == sim::Mode::Full && next_out && !out.run.outputs.empty())
        f.batch.finish(out.run.outputs.back().values[*next_out]);
    return out;
}

std::unique_ptr<golden::Golden> prepare_golden(const RunRequest& req, const Source& s, const Compiled& c) {
    if (req.mode != sim::Mode::Full || !s.model || !s.built ||
        (req.plan.tensor > 1 && req.config.system.exchange == card::Exchange::F32))
        return nullptr;
    auto gold = verify::golden_for(s.built->graph, s.model->checkpoint, req.config, c.program);
    gold->prepare();
    return gold;
}

Verdict verify(const RunRequest& req, const Source& s, const Compiled& c, const Simulated& sim,
               std::size_t seqs, std::unique_ptr<golden::Golden> prepared) {
    Verdict v;
    if (req.mode != sim::Mode::Full)
        v.unchecked = "timing-only run";
    else if (sim.run.fault)
        v.unchecked = "the run stopped on a bus error";
    else if (!s.model)
        v.unchecked = "a program alone has no checkpoint: pass --model DIR, the checkpoint it was compiled "
                      "from, for the bit-exact check and the accuracy";
    else if (req.plan.tensor > 1 && req.config.system.exchange == card::Exchange::F32)
        v.unchecked = "the f32 exchange (system.exchange = f32) adds the cards' rounded parts in ring order, "
                      "which is not the one-card contract; its accuracy against the f64 reference is below";
    if (!v.unchecked.empty()) return v;
    std::vector<verify::Readback> readback;
    for (auto& o : sim.microbatch_outputs.empty() ? sim.run.outputs : sim.microbatch_outputs)
        readback.push_back(o.values);
    const auto& g = s.built->graph;
    auto checked = verify::verify(g, s.model->checkpoint, req.config, c.program, sim.inputs, readback,
                                  std::move(prepared));
    v.bit_exact = checked.bit_exact();
    if (checked.first) {
        v.first = checked.first;
        v.mismatch = checked.first->text();
        if (seqs > 1)
            for (auto& [val, place] : c.program.io.outputs)
                if (g.names[val.id] == checked.first->value && !checked.first->sizes) {
                    v.mismatch += fmt::format(" (sequence {})", checked.first->element / g.shape(val).width);
                    break;
                }
    }
    return v;
}

std::optional<models::Accuracy> measure(const RunRequest& req, const Source& s, const Compiled& c,
                                        const Simulated& sim, const Feed& f) {
    const auto logits_out = output_index(c.program, program::IoRole::Logits);
    if (!req.reference || !logits_out || !s.model || req.mode != sim::Mode::Full || sim.run.fault)
        return std::nullopt;
    if (f.decoder) return batch_accuracy(*s.model, sim.run, *logits_out, f.batch);
    std::vector<std::vector<float>> logits;
    for (auto& o : sim.run.outputs)
        logits.push_back(floats(o.values[*logits_out]));
    return models::accuracy(*s.model, logits, f.prompt, f.prefill_steps, f.markers);
}

void write_outputs(const RunRequest& req, const RunReport& rep, const Source& s, const Compiled& c,
                   Staged staged) {
    const auto publish_staged = [&] {
        if (staged.ddr) staged.ddr->publish();
        if (staged.routing) staged.routing->publish();
    };
    if (!req.trace && !req.perfetto && !req.vcd && !req.csv && !req.report) {
        publish_staged();
        return;
    }
    // An encoder's one step runs the whole prompt: it is all prefill. A decoder's prompt steps (none
    // under --prompt-len: its prefill ran apart, and the trace is of the decode steps after it).
    // A system of cards: one trace, each record carrying its card, with its links' messages.
    // With microbatches a trace's step is a group's (each decode step its groups in turn).
    const std::size_t prefill = (s.decoder ? rep.prefill_steps : rep.steps) * c.microbatches;
    auto t = c.cards.empty() ? traces::trace_of(rep.run, c.program.program, req.config, req.mode, prefill)
                             : traces::trace_of(rep.run, rep.links, c.cards, req.config, req.mode, prefill);
    auto facts = run_facts(rep, req.config, s.built ? &s.built->graph : nullptr);
    traces::report::record(facts, t.header.meta); // what `cardsim report TRACE` shows
    // A model with experts: the summary's per-layer expert lines (none without: traces keep their bytes).
    if (!rep.experts.empty()) t.header.meta["run.experts"] = expert_lines(rep.experts);
    // Every file is written and staged before any is renamed into place: a failure (a full disk)
    // leaves each destination as it was, never a new trace beside an old CSV.
    std::vector<io::AtomicFile> files;
    const auto stage = [&](const std::filesystem::path& path, const std::string& text) {
        io::AtomicFile f(path);
        f.write(text);
        f.stage();
        files.push_back(std::move(f));
    };
    if (req.report)
        stage(*req.report,
              traces::report::run_page(
                  {t, facts, req.trace ? req.trace->filename().string() : "",
                   c.cards.empty() ? program_text(c.program.program)
                                   : std::vector<std::string>{}})); // a system: cards' programs differ
    if (req.trace) files.push_back(traces::stage_trace(*req.trace, t));
    if (req.perfetto) stage(*req.perfetto, traces::to_perfetto(t));
    if (req.vcd) stage(*req.vcd, traces::to_vcd(t)); // from the records: unit busy, DDR channel activity
    if (req.csv) stage(*req.csv, traces::to_csv(t));
    for (auto& f : files)
        f.publish();
    publish_staged();
}

} // namespace cardsim::cli::stages
