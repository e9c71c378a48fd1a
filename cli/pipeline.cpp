#include "cli/pipeline.hpp"

#include "cli/check_layers.hpp"
#include "cli/child_process.hpp"
#include "cli/decode_batch.hpp"
#include "cli/report_facts.hpp"
#include "engine/error.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/program.hpp"
#include "engine/program/validate.hpp"
#include "engine/shim/check.hpp"
#include "models/checkpoint_digest.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "sim/rtl/rtl_matvec.hpp"
#include "sim/units/unit_set.hpp"
#include "traces/csv.hpp"
#include "traces/from_run.hpp"
#include "traces/perfetto.hpp"
#include "traces/report/run_page.hpp"
#include "traces/time_split.hpp"
#include "traces/vcd.hpp"
#include "traces/writer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

namespace cardsim::cli {
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

/// Checks that `c` (read from `path`) was compiled from `model` and its graph `g`.
void check_compiled_from(const program::Loaded& c, const std::filesystem::path& path,
                         const std::filesystem::path& model_dir, const models::Model& model,
                         const graph::Graph& g) {
    auto want = c.program.host.checkpoint_digest, have = models::checkpoint_digest(model.checkpoint);
    if (want != have)
        throw Error(
            fmt::format("{}: the program was compiled from the checkpoint with digest {:016x}, and {} has "
                        "digest {:016x}: it is another checkpoint",
                        path.string(), want, model_dir.string(), have));
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
        all.max_abs_error = std::max(all.max_abs_error, a.max_abs_error);
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

/// The markers of an encoder run over `n` tokens: every fourth token.
std::vector<std::size_t> encoder_markers(std::size_t n) {
    std::vector<std::size_t> m;
    for (std::size_t t = 0; t < n; t += 4)
        m.push_back(t);
    return m;
}

} // namespace

/// How busy the run kept the card, for its power estimate: each unit kind's busy cycles over its
/// instances' time, the arena as busy as the units are on average, the DDR's read and write rates.
fit::Activity activity(const card::CardConfig& config, const sim::RunResult& run) {
    fit::Activity a;
    if (run.cycles == 0 || run.seconds <= 0) return a;
    std::uint64_t busy_all = 0, instances = 0;
    for (auto kind : card::all_unit_kinds) {
        const auto count = config.units[kind].count;
        const auto busy = run.kind_busy[static_cast<std::size_t>(kind)];
        if (count) a.busy[static_cast<std::size_t>(kind)] = double(busy) / double(run.cycles) / count;
        busy_all += busy;
        instances += count;
    }
    a.arena = instances ? double(busy_all) / double(instances * run.cycles) : 0.0;
    for (auto& ch : run.channels) {
        a.ddr_read_bytes_per_second += double(ch.read_bytes) / run.seconds;
        a.ddr_write_bytes_per_second += double(ch.write_bytes) / run.seconds;
    }
    return a;
}

/// The prefill of a prompt of `request.prompt_len` tokens in `chunks` steps of `request.chunk`
/// tokens of one sequence (positions from 0; the last chunk's rows past the prompt are timed too,
/// as a fixed bucket runs them), simulated in a child process on a program compiled for that
/// bucket with `decode_options`' caches.
Phase prefill_phase(const RunRequest& req, const graph::Graph& g, const graph::WeightSource& weights,
                    const lower::Options& decode_options, std::size_t chunks) {
    return parse_phase(in_child([&] {
        lower::Options o = decode_options;
        o.bucket = graph::Bucket{req.chunk, 1, 0};
        lower::Compiled compiled;
        try {
            compiled = lower::lower(g, weights, lower::target_of(req.config), o);
        } catch (const Error& e) {
            throw Error(fmt::format("the prefill program for --chunk {}: {}", req.chunk, e.what()));
        }
        sim::RunPlan plan;
        plan.steps = chunks;
        plan.mode = sim::Mode::TimingOnly;
        plan.inputs = [&](std::size_t s, const sim::StepOutputs*) {
            graph::BatchInputs in;
            in.ids.assign(req.chunk, 0);
            for (std::size_t i = 0; i < req.chunk; ++i)
                in.positions.push_back(std::uint32_t(s * req.chunk + i));
            in.seq_starts = {0, std::uint32_t(req.chunk)};
            if (req.progress) fmt::print(stderr, "\rprefill chunk {}/{}", s + 1, chunks);
            return in;
        };
        auto run = sim::simulate(req.config, compiled, plan);
        if (run.fault) throw Error("the prefill stopped on a bus error: " + *run.fault);
        return phase_of(run, req.config, *req.prompt_len).encode();
    }));
}

RunReport run_model(const RunRequest& req) {
    RunReport rep;
    if (!req.model_dir && !req.program) throw Error("run: give a checkpoint directory or a program file");
    std::optional<models::Model> model;
    std::optional<models::BuiltGraph> built;
    if (req.model_dir) {
        model = models::load_model(*req.model_dir, req.shapes_only);
        built = models::build_graph(*model);
        rep.model = models::describe(model->spec);
        if (model->checkpoint.shapes_only() && req.mode == sim::Mode::Full)
            throw Error(fmt::format("{}: the checkpoint has shapes only ({}), no weights to compute with: a "
                                    "full run needs its safetensors; run it with --timing-only",
                                    req.model_dir->string(),
                                    req.shapes_only ? "--shapes-only" : "config.json without safetensors"));
    }
    program::Loaded compiled;
    std::size_t steps = 0;
    const std::size_t prompt_len = req.prompt_len.value_or(0);
    if (req.prompt_len) {
        if (!model || req.program)
            throw Error(
                "--prompt-len: the run compiles the checkpoint twice (a prefill chunk and decode): give "
                "a checkpoint directory, not a program");
        if (req.mode != sim::Mode::TimingOnly)
            throw Error("--prompt-len N times a prompt of N tokens without their ids: pass --timing-only");
        if (!std::holds_alternative<models::DecoderSpec>(model->spec))
            throw Error("--prompt-len: an encoder runs its prompt in one step (give --prompt)");
        if (prompt_len == 0 || req.chunk == 0) throw Error("--prompt-len and --chunk must be positive");
        if (!req.prompt.empty()) throw Error("--prompt-len: give a prompt length or a prompt, not both");
        if (req.check_layers) throw Error("--prompt-len: layer checks need a full run");
    }
    if (req.program) {
        if (req.check_layers)
            throw Error(fmt::format("{}: a program reads back the layers it was compiled to check: pass "
                                    "--check-layers to cardsim compile",
                                    req.program->string()));
        if (req.max_positions)
            throw Error(fmt::format("{}: a program's caches hold the positions it was compiled for: pass "
                                    "--max-positions to cardsim compile",
                                    req.program->string()));
        compiled = read_program(*req.program, req.config);
        auto* weights = compiled.program.region(program::Region::Weights);
        if (req.mode == sim::Mode::Full && weights && weights->size > 0 && compiled.image.chunks.empty())
            throw Error(
                fmt::format("{}: its DDR image holds no weights (compiled with --shapes-only): a full "
                            "run computes on them; run it with --timing-only",
                            req.program->string()));
        if (model) check_compiled_from(compiled, *req.program, *req.model_dir, *model, built->graph);
        rep.program = req.program;
        if (!compiled.program.host.model.empty()) rep.model = compiled.program.host.model;
    }
    // What the run feeds: a decoder one sequence a token a step (prefill, then decode, each step's
    // input the card's own arg-max); the encoder its one sequence in one step, a marker every fourth
    // token. A program fixes the bucket; compiling here fits the bucket to the prompt.
    const program::Host& host = compiled.program.host; // a program's; filled by lowering otherwise
    bool decoder = req.program ? host.entry(program::IoRole::Next) != nullptr
                               : std::holds_alternative<models::DecoderSpec>(model->spec);
    std::size_t vocab = 0;
    if (req.program)
        vocab = host.vocab;
    else if (auto* d = std::get_if<models::DecoderSpec>(&model->spec))
        vocab = d->vocab;
    else
        vocab = std::get<models::EncoderSpec>(model->spec).vocab;
    if (req.program && !decoder && req.prompt.empty())
        throw Error(fmt::format("{}: the program runs {} tokens at once: pass --prompt with {} ids",
                                req.program->string(), host.tokens, host.tokens));
    rep.prompt = req.prompt.empty() && !req.prompt_len ? default_prompt(0, vocab ? vocab : 1) : req.prompt;
    // A decoder's sequences: a program's bucket fixes how many (its rows, one token each).
    rep.seqs = req.program && decoder && host.tokens == host.seqs
                   ? host.seqs
                   : req.seqs.value_or(1 + req.other_prompts.size());
    if (req.seqs && *req.seqs != rep.seqs)
        throw Error(fmt::format("--seqs {}: the program {} decodes {} sequences a step", *req.seqs,
                                req.program->string(), rep.seqs));
    if (!decoder && (rep.seqs != 1 || !req.other_prompts.empty()))
        throw Error("--seqs, --prompt: an encoder run takes one sequence (one prompt)");
    if (req.prompt_len && rep.seqs != 1)
        throw Error(fmt::format("--prompt-len with {} sequences: the prefill is timed for one sequence "
                                "(drop --seqs and the extra --prompt)",
                                rep.seqs));
    std::vector<std::vector<std::uint32_t>> given;
    if (!req.prompt.empty()) given.push_back(req.prompt);
    given.insert(given.end(), req.other_prompts.begin(), req.other_prompts.end());
    // With a prompt length the decode steps start after the prefilled prompt, fed any id (the
    // token after the prompt: timing does not depend on it).
    if (req.prompt_len) given = {{0}};
    DecodeBatch batch(batch_prompts(given, rep.seqs, vocab ? vocab : 1), req.tokens,
                      std::uint32_t(req.prompt_len.value_or(0)));
    for (std::size_t q = 0; q < batch.seqs(); ++q)
        for (auto t : batch.prompt(q))
            if (vocab && t >= vocab)
                throw Error(fmt::format("prompt token {} is past the vocabulary of {}", t, vocab));
    std::vector<std::size_t> markers;
    if (decoder && req.prompt_len) {
        steps = batch.steps(); // decode steps after the prefilled prompt
    } else if (decoder) {
        rep.prefill_steps = batch.prefill_steps();
        steps = batch.steps();
    } else {
        markers = encoder_markers(rep.prompt.size());
        steps = 1;
    }
    rep.steps = steps;
    if (req.program) {
        auto& h = host;
        if (decoder && h.tokens != h.seqs)
            throw Error(
                fmt::format("{}: cardsim run decodes one token of each sequence a step, and the program's "
                            "bucket has {} tokens and {} sequences (compile it with --bucket seqs=S)",
                            req.program->string(), h.tokens, h.seqs));
        if (decoder && steps > h.max_positions)
            throw Error(fmt::format(
                "{}: the run needs {} positions (a prompt of {} and {} tokens), the program's "
                "caches hold {} (compile it with --max-positions {})",
                req.program->string(), steps, rep.prompt.size(), req.tokens, h.max_positions, steps));
        if (!decoder && (h.tokens != rep.prompt.size() || h.seqs != 1 || h.markers != markers.size()))
            throw Error(
                fmt::format("{}: the program's bucket holds {} tokens, {} sequences and {} markers; a "
                            "prompt of {} ids needs 1 sequence of {} tokens and {} markers",
                            req.program->string(), h.tokens, h.seqs, h.markers, rep.prompt.size(),
                            rep.prompt.size(), markers.size()));
    } else {
        const auto& g = built->graph;
        auto verdict = shim::check_model(g, shim::capabilities(req.config));
        if (!verdict.runs()) {
            std::string why = fmt::format("{}: the card refuses this model:", req.model_dir->string());
            for (auto& r : verdict.refusals)
                why += fmt::format("\n  {}", r.text());
            throw Error(why);
        }
        lower::Options o;
        o.bucket = decoder ? graph::Bucket{rep.seqs, rep.seqs, 0}
                           : graph::Bucket{rep.prompt.size(), 1, markers.size()};
        if (!decoder && req.max_positions)
            throw Error("--max-positions: an encoder keeps no caches between steps");
        const std::size_t chunks = (prompt_len + req.chunk - 1) / req.chunk;
        const std::size_t needed = std::max(prompt_len + steps, chunks * req.chunk);
        o.max_positions = decoder ? req.max_positions.value_or(req.prompt_len ? needed : steps) : 1;
        if (req.prompt_len && o.max_positions < needed)
            throw Error(
                fmt::format("--max-positions {}: a prompt of {} in chunks of {} and {} tokens need {}",
                            o.max_positions, prompt_len, req.chunk, steps, needed));
        if (decoder && o.max_positions < steps)
            throw Error(
                fmt::format("--max-positions {}: the run needs {} positions (a prompt of {} and {} tokens)",
                            o.max_positions, steps, rep.prompt.size(), req.tokens));
        if (req.check_layers) o.probes = layer_probes(g, *req.check_layers);
        o.model = rep.model;
        o.checkpoint_digest = models::checkpoint_digest(model->checkpoint);
        o.shapes_only = model->checkpoint.shapes_only();
        if (req.prompt_len) rep.prefill = prefill_phase(req, g, model->checkpoint, o, chunks);
        compiled = lower::lower(g, model->checkpoint, lower::target_of(req.config), o);
    }
    for (auto& p : compiled.io.probes)
        if (p.layer) rep.layers_checked.push_back(*p.layer);
    rep.arena_bytes = compiled.program.arena_bytes;
    auto next_out = output_index(compiled, program::IoRole::Next);
    auto logits_out = output_index(compiled, program::IoRole::Logits);
    std::vector<graph::BatchInputs> inputs;
    if (!decoder) {
        graph::BatchInputs in;
        in.ids = rep.prompt;
        for (std::uint32_t t = 0; t < rep.prompt.size(); ++t)
            in.positions.push_back(t);
        in.seq_starts = {0, std::uint32_t(rep.prompt.size())};
        in.qtype = {0};
        for (auto m : markers)
            in.marker_rows.push_back(std::uint32_t(m));
        in.marker_starts = {0, std::uint32_t(markers.size())};
        inputs.push_back(in);
    }
    sim::RunPlan plan;
    plan.steps = steps;
    plan.mode = req.mode;
    plan.keep_data = req.trace_data;
    // Every command's record, when something reads them: the trace and its exports, or the RTL's
    // cycles beside the model's; else only the totals.
    plan.keep_records = req.trace || req.perfetto || req.vcd || req.csv || req.report || req.rtl_matvec;
    plan.inputs = [&](std::size_t s, const sim::StepOutputs* prev) {
        if (!decoder) return inputs[0];
        auto in = batch.inputs(s, prev && next_out ? std::span(prev->values[*next_out])
                                                   : std::span<const std::byte>());
        if (req.mode == sim::Mode::Full) inputs.push_back(in); // the bit-exact check replays them
        if (req.progress) fmt::print(stderr, "\rstep {}/{}", s + 1, rep.steps);
        return in;
    };
    std::optional<sim::memory::TraceExporter> exporter;
    if (req.ddr_trace) {
        exporter.emplace(req.ddr_trace->path, req.ddr_trace->spec, req.config.ddr, trace_context(req.config));
        plan.ddr_observer = &*exporter;
    }
    if (req.rtl_matvec) {
        if (req.mode != sim::Mode::Full)
            throw Error("--rtl matvec: a timing-only run computes nothing, so the RTL would not run (drop "
                        "--timing-only)");
        auto units = sim::units::UnitSet::standard(req.config);
        units.set(sim::rtl::rtl_matvec_unit(req.config));
        plan.units = units;
    }
    rep.run = sim::simulate(req.config, compiled, plan);
    if (exporter) {
        exporter->close();
        rep.ddr_trace = ddr_trace_text(*exporter, req.config.ddr, rep.run.ddr_drained);
    }
    for (const auto& r : rep.run.records) {
        if (!r.measured_cycles) continue;
        const auto op = std::string(program::name(r.opcode));
        auto k = std::find_if(rep.measured.begin(), rep.measured.end(),
                              [&](const MeasuredKind& m) { return m.opcode == op; });
        if (k == rep.measured.end()) k = rep.measured.insert(rep.measured.end(), MeasuredKind{op});
        ++k->commands;
        k->model += r.compute_cycles + req.config.units[r.unit].latency;
        k->measured += r.measured_cycles;
    }
    if (req.progress) fmt::print(stderr, "\r{:40}\r", "");
    if (req.prompt_len && !rep.run.step_end.empty())
        rep.decode = phase_of(rep.run, req.config, rep.run.step_end.size());
    if (decoder && req.mode == sim::Mode::Full && next_out && !rep.run.outputs.empty()) {
        batch.finish(rep.run.outputs.back().values[*next_out]);
        for (std::size_t q = 0; q < batch.seqs(); ++q)
            rep.sequences.push_back({batch.prompt(q), batch.generated(q)});
        rep.generated = batch.generated(0);
    }
    if (decoder && !req.prompt_len) rep.prompt = batch.prompt(0);
    for (auto& ch : rep.run.channels)
        rep.ddr_bytes += ch.read_bytes + ch.write_bytes;
    rep.peak_bytes_per_second = req.config.ddr.channels * req.config.ddr.channel_peak_bytes_per_second();
    rep.fit = fit::check_fit(req.config);
    rep.watts =
        fit::estimate_power(req.config, req.config.clock.kernel_mhz, activity(req.config, rep.run)).total();
    if (req.mode != sim::Mode::Full)
        rep.unchecked = "timing-only run";
    else if (rep.run.fault)
        rep.unchecked = "the run stopped on a bus error";
    else if (!model)
        rep.unchecked = "a program alone has no checkpoint: pass --model DIR, the checkpoint it was compiled "
                        "from, for the bit-exact check and the accuracy";
    if (rep.unchecked.empty()) {
        std::vector<verify::Readback> readback;
        for (auto& o : rep.run.outputs)
            readback.push_back(o.values);
        auto v = verify::verify(built->graph, model->checkpoint, req.config, compiled, inputs, readback);
        rep.bit_exact = v.bit_exact();
        if (v.first) {
            rep.first_mismatch = v.first;
            rep.mismatch = v.first->text();
            if (rep.seqs > 1)
                for (auto& [val, place] : compiled.io.outputs)
                    if (built->graph.names[val.id] == v.first->value && !v.first->sizes) {
                        rep.mismatch +=
                            fmt::format(" (sequence {})", v.first->element / built->graph.shape(val).width);
                        break;
                    }
        }
        if (req.reference && logits_out && decoder)
            rep.accuracy = batch_accuracy(*model, rep.run, *logits_out, batch);
        else if (req.reference && logits_out) {
            std::vector<std::vector<float>> logits;
            for (auto& o : rep.run.outputs)
                logits.push_back(floats(o.values[*logits_out]));
            rep.accuracy = models::accuracy(*model, logits, rep.prompt, rep.prefill_steps, markers);
        }
    }
    if (req.trace || req.perfetto || req.vcd || req.csv || req.report) {
        // An encoder's one step runs the whole prompt: it is all prefill.
        auto t = traces::trace_of(rep.run, compiled.program, req.config, req.mode,
                                  rep.prefill_steps ? rep.prefill_steps : rep.steps);
        auto facts = run_facts(rep, req.config, built ? &built->graph : nullptr);
        traces::report::record(facts, t.header.meta); // what `cardsim report TRACE` shows
        if (req.report)
            traces::report::write_run_page(
                *req.report,
                {t, facts, req.trace ? req.trace->filename().string() : "", program_text(compiled.program)});
        if (req.trace) traces::write_trace(*req.trace, t);
        if (req.perfetto) traces::write_perfetto(*req.perfetto, t);
        if (req.vcd) traces::write_vcd(*req.vcd, t); // from the records: unit busy, DDR channel activity
        if (req.csv) traces::write_csv(*req.csv, t);
    }
    return rep;
}

std::string RunReport::text() const {
    std::string o;
    o += fmt::format("model: {}\n", model);
    if (program) o += fmt::format("program: {}\n", program->string());
    auto ids = [](const std::vector<std::uint32_t>& v) {
        std::string s;
        for (auto t : v)
            s += fmt::format("{}{}", s.empty() ? "" : " ", t);
        return s;
    };
    double secs = run.seconds;
    if (seqs == 1) {
        if (prefill)
            o += fmt::format("prompt: {} tokens (--prompt-len: timed without ids)\n", prefill->tokens);
        else
            o += fmt::format("prompt: {}\n", ids(prompt));
        if (!generated.empty()) o += fmt::format("generated: {}\n", ids(generated));
    } else {
        std::size_t all = 0;
        for (std::size_t q = 0; q < sequences.size(); ++q) {
            o +=
                fmt::format("sequence {}: prompt {}; generated {} ({} tokens)\n", q, ids(sequences[q].prompt),
                            ids(sequences[q].generated), sequences[q].generated.size());
            all += sequences[q].generated.size();
        }
        if (all)
            o += fmt::format("generated: {} tokens over {} sequences, {:.1f} tokens/s\n", all, seqs,
                             secs > 0 ? double(all) / secs : 0.0);
    }
    if (run.fault) o += fmt::format("FAULT: {}\n", *run.fault);
    if (seqs == 1)
        o += fmt::format("card: {} steps in {} cycles, {:.3f} ms simulated ({:.1f} tokens/s)\n", steps,
                         run.cycles, secs * 1e3, secs > 0 ? double(steps) / secs : 0.0);
    else
        o += fmt::format(
            "card: {} steps of {} sequences ({} tokens) in {} cycles, {:.3f} ms simulated ({:.1f} "
            "tokens/s)\n",
            steps, seqs, steps * seqs, run.cycles, secs * 1e3, secs > 0 ? double(steps * seqs) / secs : 0.0);
    if (steps > prefill_steps && run.step_end.size() == steps && prefill_steps > 0) {
        double decode = double(run.step_end.back() - run.step_end[prefill_steps - 1]) / double(run.cycles) *
                        secs / double(steps - prefill_steps);
        if (seqs == 1)
            o += fmt::format("decode: {:.3f} ms a token ({:.1f} tokens/s)\n", decode * 1e3, 1.0 / decode);
        else
            o += fmt::format("decode: {:.3f} ms a step of {} sequences ({:.1f} tokens/s)\n", decode * 1e3,
                             seqs, double(seqs) / decode);
    }
    if (prefill && decode) {
        o += fmt::format(
            "prefill: {} tokens in {} chunks: {:.3f} ms ({:.1f} tokens/s), time to first token {:.3f} "
            "ms; {}\n",
            prefill->tokens, prefill->steps, prefill->seconds * 1e3, prefill->tokens_per_second(),
            prefill->seconds * 1e3, prefill->bound_text());
        o += fmt::format("decode after it: {} tokens in {:.3f} ms, {:.3f} ms a token ({:.1f} tokens/s); {}\n",
                         decode->tokens, decode->seconds * 1e3,
                         decode->seconds * 1e3 / double(std::max<std::size_t>(decode->tokens, 1)),
                         decode->tokens_per_second(), decode->bound_text());
    }
    double bw = secs > 0 ? double(ddr_bytes) / secs : 0;
    double roofline = double(ddr_bytes) / peak_bytes_per_second;
    o += fmt::format(
        "ddr: {:.1f} MB moved, {:.2f} GB/s ({:.1f} % of the {:.1f} GB/s peak); roofline {:.3f} ms, "
        "achieved {:.1f} % of it\n",
        double(ddr_bytes) / 1e6, bw / 1e9, 100 * bw / peak_bytes_per_second, peak_bytes_per_second / 1e9,
        roofline * 1e3, secs > 0 ? 100 * roofline / secs : 0.0);
    for (std::size_t c = 0; c < run.channels.size(); ++c) {
        auto& ch = run.channels[c];
        o += fmt::format(
            "  channel {}: {:.1f} MB read, {:.1f} MB written, row hits {} misses {} conflicts {}\n", c,
            double(ch.read_bytes) / 1e6, double(ch.write_bytes) / 1e6, ch.row_hits, ch.row_misses,
            ch.row_conflicts);
    }
    o += fmt::format("power: {:.1f} W on average (estimate), {:.3g} tokens per joule\n{}\n", watts,
                     watts > 0 && secs > 0 ? double(steps * seqs) / secs / watts : 0.0,
                     fit::verdict_line(fit));
    for (const auto& m : measured)
        o += fmt::format("rtl {}: {} commands, RTL {} cycles, model {} cycles (compute + latency; RTL/model "
                         "{:.3f})\n",
                         m.opcode, m.commands, m.measured, m.model,
                         m.model ? double(m.measured) / double(m.model) : 0.0);
    o += "units busy:";
    for (auto& [name, busy] : run.unit_busy)
        if (busy)
            o += fmt::format(" {} {:.1f} %", name,
                             run.cycles ? 100.0 * double(busy) / double(run.cycles) : 0.0);
    o += "\n";
    traces::TimeByUnit time; // where each unit kind's commands' time went
    for (auto& r : run.records)
        time.add(card::name(r.unit), r.time);
    for (auto& [label, text] : traces::time_lines(time.units()))
        o += label + ": " + text + "\n";
    if (!layers_checked.empty()) {
        std::string l;
        for (auto v : layers_checked)
            l += fmt::format("{}{}", l.empty() ? "" : " ", v);
        o += fmt::format("layers read back each step: {}\n", l);
    }
    if (bit_exact)
        o += *bit_exact ? fmt::format("bit-exact: yes (every output{} equals the golden executor's)\n",
                                      layers_checked.empty() ? "" : " and every checked layer's output")
                        : fmt::format("bit-exact: NO: {}\n", mismatch);
    else
        o += fmt::format("bit-exact: not checked ({})\n", unchecked);
    if (accuracy)
        o += fmt::format(
            "accuracy vs f64 reference over {} steps: max |logit error| {:.3g}, top-1 agreement {:.1f} %, "
            "KL {:.3g} nats\n",
            accuracy->steps, accuracy->max_abs_error, 100 * accuracy->top1_agreement, accuracy->kl);
    o += ddr_trace;
    o +=
        fmt::format("host: {:.2f} s (setup {:.2f} s, steps {:.2f} s: {:.3g} ms a step, {:.2f}x the simulated "
                    "time)\n",
                    run.host_seconds, run.setup_seconds, run.steps_seconds,
                    steps ? 1e3 * run.steps_seconds / double(steps) : 0.0,
                    run.seconds > 0 ? run.steps_seconds / run.seconds : 0.0);
    return o;
}

std::string RunReport::machine() const {
    std::string o;
    auto kv = [&](std::string_view k, auto v) { o += fmt::format("{}={}\n", k, v); };
    kv("steps", steps);
    kv("seqs", seqs);
    kv("cycles", run.cycles);
    kv("seconds", run.seconds);
    kv("tokens_per_second", run.seconds > 0 ? double(steps * seqs) / run.seconds : 0.0);
    if (steps > prefill_steps && run.step_end.size() == steps && prefill_steps > 0)
        kv("decode_tokens_per_second",
           double(seqs * (steps - prefill_steps)) * double(run.cycles) /
               (double(run.step_end.back() - run.step_end[prefill_steps - 1]) * run.seconds));
    std::string gen;
    for (std::size_t q = 0; q < sequences.size(); ++q)
        gen += fmt::format("{}{}", q ? "," : "", sequences[q].generated.size());
    kv("generated_tokens", gen);
    kv("ddr_bytes", ddr_bytes);
    kv("bandwidth_gbs", run.seconds > 0 ? double(ddr_bytes) / run.seconds / 1e9 : 0.0);
    kv("roofline_fraction", run.seconds > 0 ? double(ddr_bytes) / peak_bytes_per_second / run.seconds : 0.0);
    for (auto& [name, busy] : run.unit_busy)
        if (busy) kv(fmt::format("busy_{}", name), run.cycles ? double(busy) / double(run.cycles) : 0.0);
    for (const auto& m : measured) { // --rtl runs: the RTL's cycles beside the model's
        kv(fmt::format("rtl_cycles_{}", m.opcode), m.measured);
        kv(fmt::format("model_cycles_{}", m.opcode), m.model);
    }
    kv("arena_bytes", arena_bytes);
    kv("dsp", fit.table.total.dsps);
    kv("alm", fit.table.total.alms);
    kv("m20k", fit.table.total.m20ks);
    kv("fmax_mhz", fit.clock.fmax_mhz);
    kv("watts", watts);
    kv("tokens_per_joule", watts > 0 && run.seconds > 0 ? double(steps * seqs) / run.seconds / watts : 0.0);
    kv("fits", fit.fits() ? "yes" : "no");
    kv("bit_exact", bit_exact ? (*bit_exact ? "yes" : "no") : "unchecked");
    std::string layers;
    for (auto v : layers_checked)
        layers += fmt::format("{}{}", layers.empty() ? "" : ",", v);
    kv("layers_checked", layers);
    kv("mismatch", mismatch);
    kv("mismatch_step", first_mismatch ? fmt::format("{}", first_mismatch->step) : "");
    kv("mismatch_layer",
       first_mismatch && first_mismatch->layer ? fmt::format("{}", *first_mismatch->layer) : "");
    if (accuracy) {
        kv("max_abs_error", accuracy->max_abs_error);
        kv("top1_agreement", accuracy->top1_agreement);
        kv("kl", accuracy->kl);
    }
    if (prefill && decode) {
        kv("prompt_len", prefill->tokens);
        kv("prefill_steps", prefill->steps);
        kv("prefill_cycles", prefill->cycles);
        kv("prefill_ddr_bytes", prefill->ddr_bytes);
        kv("prefill_seconds", prefill->seconds);
        kv("prefill_tokens_per_second", prefill->tokens_per_second());
        kv("ttft_seconds", prefill->seconds);
        kv("prefill_bound", prefill->bandwidth_bound() ? "bandwidth" : "compute");
        kv("prefill_roofline_fraction",
           prefill->seconds > 0 ? prefill->roofline_seconds / prefill->seconds : 0.0);
        kv("decode_tokens_per_second", decode->tokens_per_second());
        kv("decode_bound", decode->bandwidth_bound() ? "bandwidth" : "compute");
        kv("decode_roofline_fraction",
           decode->seconds > 0 ? decode->roofline_seconds / decode->seconds : 0.0);
    }
    kv("fault", run.fault ? *run.fault : "");
    kv("host_seconds", run.host_seconds);
    kv("host_setup_seconds", run.setup_seconds);
    kv("host_steps_seconds", run.steps_seconds);
    return o;
}

} // namespace cardsim::cli
