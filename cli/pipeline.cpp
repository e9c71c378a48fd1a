#include "cli/pipeline.hpp"

#include "engine/error.hpp"
#include "engine/golden/golden.hpp"
#include "engine/lower/lower.hpp"
#include "engine/shim/check.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"
#include "sim/units/executor.hpp"
#include "traces/csv.hpp"
#include "traces/from_run.hpp"
#include "traces/perfetto.hpp"
#include "traces/writer.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cardsim::cli {
namespace {

/// The prompt when none is given: a few fixed ids below `vocab`.
std::vector<std::uint32_t> default_prompt(std::size_t vocab) {
    std::vector<std::uint32_t> p;
    for (std::uint32_t t : {1u, 17u, 42u, 7u})
        p.push_back(t % std::uint32_t(vocab));
    return p;
}

std::vector<float> floats(const std::vector<std::byte>& b) {
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), 4 * f.size());
    return f;
}

/// Softmax in double.
std::vector<double> softmax(const std::vector<double>& x) {
    double m = *std::max_element(x.begin(), x.end()), s = 0;
    std::vector<double> p(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        s += p[i] = std::exp(x[i] - m);
    for (auto& v : p)
        v /= s;
    return p;
}

/// The index of a graph output in the io map, or none.
std::optional<std::size_t> output_index(const lower::Compiled& c, std::optional<graph::Val> v) {
    if (!v) return std::nullopt;
    for (std::size_t i = 0; i < c.io.outputs.size(); ++i)
        if (c.io.outputs[i].first == *v) return i;
    return std::nullopt;
}

/// Compares every step's outputs with the golden executor's; returns the first difference.
std::optional<std::string> compare_golden(const graph::Graph& g, const graph::WeightSource& w,
                                          const card::CardConfig& config, const lower::Compiled& c,
                                          const std::vector<graph::BatchInputs>& inputs,
                                          const sim::RunResult& run) {
    golden::Golden gold(g, w, config, c.options.bucket, c.options.max_positions);
    for (std::size_t s = 0; s < run.outputs.size(); ++s) {
        gold.step(inputs[s]);
        for (std::size_t o = 0; o < c.io.outputs.size(); ++o) {
            auto v = c.io.outputs[o].first;
            auto& want = gold.value(v);
            auto got = floats(run.outputs[s].values[o]);
            for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
                std::uint32_t a, b;
                std::memcpy(&a, &got[i], 4);
                std::memcpy(&b, &want[i], 4);
                if (a != b)
                    return fmt::format(
                        "step {}, output {}, element {}: card {:#010x} ({}), golden {:#010x} ({})", s,
                        g.names[v.id], i, a, got[i], b, want[i]);
            }
            if (want.size() != got.size())
                return fmt::format("step {}, output {}: {} values on the card, {} golden", s, g.names[v.id],
                                   got.size(), want.size());
        }
    }
    return std::nullopt;
}

} // namespace

RunReport run_model(const RunRequest& req) {
    RunReport rep;
    auto model = models::load_model(req.model_dir);
    auto built = models::build_graph(model);
    const auto& g = built.graph;
    rep.model = models::describe(model.spec);
    auto caps = shim::capabilities(req.config);
    auto verdict = shim::check_model(g, caps);
    if (!verdict.runs()) {
        std::string why = fmt::format("{}: the card refuses this model:", req.model_dir.string());
        for (auto& r : verdict.refusals)
            why += fmt::format("\n  {}", r.text());
        throw Error(why);
    }
    const auto* dec = std::get_if<models::DecoderSpec>(&model.spec);
    const auto* enc = std::get_if<models::EncoderSpec>(&model.spec);
    std::size_t vocab = dec ? dec->vocab : enc->vocab;
    rep.prompt = req.prompt.empty() ? default_prompt(vocab) : req.prompt;
    for (auto t : rep.prompt)
        if (t >= vocab) throw Error(fmt::format("prompt token {} is past the vocabulary of {}", t, vocab));
    // Buckets: a decoder runs one sequence a token a step (prefill, then decode); the encoder runs
    // its one sequence in one step, a marker every fourth token.
    std::vector<graph::BatchInputs> inputs;
    graph::Bucket bucket;
    std::size_t max_positions = 1;
    std::vector<std::size_t> markers;
    if (dec) {
        bucket = graph::Bucket{1, 1, 0};
        rep.prefill_steps = rep.prompt.size();
        rep.steps = rep.prompt.size() + std::max<std::size_t>(req.tokens, 1) - 1;
        max_positions = rep.steps;
    } else {
        for (std::size_t t = 0; t < rep.prompt.size(); t += 4)
            markers.push_back(t);
        bucket = graph::Bucket{rep.prompt.size(), 1, markers.size()};
        rep.steps = 1;
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
    auto compiled = lower::lower(g, model.checkpoint, lower::target_of(req.config),
                                 lower::Options{bucket, max_positions});
    rep.arena_bytes = compiled.program.arena_bytes;
    auto next_out = output_index(compiled, g.next), logits_out = output_index(compiled, g.logits);
    // Decoder steps feed the prompt, then the card's own arg-max.
    sim::RunPlan plan;
    plan.steps = rep.steps;
    plan.mode = req.mode;
    plan.keep_data = req.trace_data;
    if (req.vcd) plan.vcd = req.vcd->string();
    if (req.mode == sim::Mode::Full) plan.execute = sim::make_executor(req.config);
    std::vector<std::uint32_t> tokens = rep.prompt;
    plan.inputs = [&](std::size_t s, const sim::StepOutputs* prev) {
        if (!dec) return inputs[0];
        if (s >= tokens.size()) {
            std::uint32_t next = 0;
            if (prev && next_out) next = std::uint32_t(floats(prev->values[*next_out])[0]);
            tokens.push_back(next);
        }
        graph::BatchInputs in;
        in.ids = {tokens[s]};
        in.positions = {std::uint32_t(s)};
        inputs.push_back(in);
        if (req.progress) fmt::print(stderr, "\rstep {}/{}", s + 1, rep.steps);
        return in;
    };
    rep.run = sim::simulate(req.config, compiled, plan);
    if (req.progress) fmt::print(stderr, "\r{:40}\r", "");
    if (dec && req.mode == sim::Mode::Full && next_out && !rep.run.outputs.empty()) {
        tokens.push_back(std::uint32_t(floats(rep.run.outputs.back().values[*next_out])[0]));
        rep.generated.assign(tokens.begin() + std::ptrdiff_t(rep.prompt.size()), tokens.end());
    }
    for (auto& ch : rep.run.channels)
        rep.ddr_bytes += ch.read_bytes + ch.write_bytes;
    rep.peak_bytes_per_second = req.config.ddr.channels * req.config.ddr.channel_peak_bytes_per_second();
    if (req.mode == sim::Mode::Full && !rep.run.fault) {
        auto mismatch = compare_golden(g, model.checkpoint, req.config, compiled, inputs, rep.run);
        rep.bit_exact = !mismatch;
        if (mismatch) rep.mismatch = *mismatch;
    }
    if (req.mode == sim::Mode::Full && req.reference && !rep.run.fault && logits_out) {
        Accuracy acc;
        std::size_t agree = 0;
        if (dec) {
            models::DecoderReference ref(model.checkpoint);
            auto session = ref.start();
            for (std::size_t s = 0; s < rep.run.outputs.size(); ++s) {
                auto want = session.feed(tokens[s]);
                if (s + 1 < rep.prefill_steps) continue; // accuracy over the generating steps
                auto got = floats(rep.run.outputs[s].values[*logits_out]);
                std::vector<double> gd(got.begin(), got.end());
                for (std::size_t i = 0; i < want.size(); ++i)
                    acc.max_abs_error = std::max(acc.max_abs_error, std::fabs(want[i] - gd[i]));
                auto best = std::size_t(std::max_element(want.begin(), want.end()) - want.begin());
                if (best == tokens[s + 1 < tokens.size() ? s + 1 : s]) ++agree;
                auto p = softmax(want), q = softmax(gd);
                double kl = 0;
                for (std::size_t i = 0; i < p.size(); ++i)
                    if (p[i] > 0) kl += p[i] * (std::log(p[i]) - std::log(std::max(q[i], 1e-300)));
                acc.kl += kl;
                ++acc.steps;
            }
        } else {
            models::EncoderReference ref(model.checkpoint);
            std::vector<std::int64_t> toks(rep.prompt.begin(), rep.prompt.end());
            auto want = ref.run(toks, 0, markers);
            auto got = floats(rep.run.outputs[0].values[*logits_out]);
            for (std::size_t i = 0; i < want.marker_logits.size() && i < got.size(); ++i)
                acc.max_abs_error = std::max(acc.max_abs_error, std::fabs(want.marker_logits[i] - got[i]));
            auto wb = std::max_element(want.marker_logits.begin(), want.marker_logits.end()) -
                      want.marker_logits.begin();
            auto gb = std::max_element(got.begin(), got.end()) - got.begin();
            agree = wb == gb;
            acc.steps = 1;
        }
        acc.top1_agreement = acc.steps ? double(agree) / double(acc.steps) : 0;
        if (acc.steps) acc.kl /= double(acc.steps);
        rep.accuracy = acc;
    }
    if (req.trace || req.perfetto || req.csv) {
        auto t = traces::trace_of(rep.run, compiled.program, req.config, req.mode);
        if (req.trace) traces::write_trace(*req.trace, t);
        if (req.perfetto) traces::write_perfetto(*req.perfetto, t);
        if (req.csv) traces::write_csv(*req.csv, t);
    }
    return rep;
}

std::string RunReport::text() const {
    std::string o;
    o += fmt::format("model: {}\n", model);
    auto ids = [](const std::vector<std::uint32_t>& v) {
        std::string s;
        for (auto t : v)
            s += fmt::format("{}{}", s.empty() ? "" : " ", t);
        return s;
    };
    o += fmt::format("prompt: {}\n", ids(prompt));
    if (!generated.empty()) o += fmt::format("generated: {}\n", ids(generated));
    if (run.fault) o += fmt::format("FAULT: {}\n", *run.fault);
    double secs = run.seconds;
    o += fmt::format("card: {} steps in {} cycles, {:.3f} ms simulated ({:.1f} tokens/s)\n", steps,
                     run.cycles, secs * 1e3, secs > 0 ? double(steps) / secs : 0.0);
    if (steps > prefill_steps && run.step_end.size() == steps && prefill_steps > 0) {
        double decode = double(run.step_end.back() - run.step_end[prefill_steps - 1]) / double(run.cycles) *
                        secs / double(steps - prefill_steps);
        o += fmt::format("decode: {:.3f} ms a token ({:.1f} tokens/s)\n", decode * 1e3, 1.0 / decode);
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
    o += "units busy:";
    for (auto& [name, busy] : run.unit_busy)
        if (busy)
            o += fmt::format(" {} {:.1f} %", name,
                             run.cycles ? 100.0 * double(busy) / double(run.cycles) : 0.0);
    o += "\n";
    if (bit_exact)
        o += *bit_exact ? "bit-exact: yes (every output equals the golden executor's)\n"
                        : fmt::format("bit-exact: NO: {}\n", mismatch);
    else
        o += "bit-exact: not checked (timing-only run)\n";
    if (accuracy)
        o += fmt::format(
            "accuracy vs f64 reference over {} steps: max |logit error| {:.3g}, top-1 agreement {:.1f} %, "
            "KL {:.3g} nats\n",
            accuracy->steps, accuracy->max_abs_error, 100 * accuracy->top1_agreement, accuracy->kl);
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
    kv("cycles", run.cycles);
    kv("seconds", run.seconds);
    kv("tokens_per_second", run.seconds > 0 ? double(steps) / run.seconds : 0.0);
    kv("ddr_bytes", ddr_bytes);
    kv("bandwidth_gbs", run.seconds > 0 ? double(ddr_bytes) / run.seconds / 1e9 : 0.0);
    kv("roofline_fraction", run.seconds > 0 ? double(ddr_bytes) / peak_bytes_per_second / run.seconds : 0.0);
    for (auto& [name, busy] : run.unit_busy)
        if (busy) kv(fmt::format("busy_{}", name), run.cycles ? double(busy) / double(run.cycles) : 0.0);
    kv("arena_bytes", arena_bytes);
    kv("bit_exact", bit_exact ? (*bit_exact ? "yes" : "no") : "unchecked");
    if (accuracy) {
        kv("max_abs_error", accuracy->max_abs_error);
        kv("top1_agreement", accuracy->top1_agreement);
        kv("kl", accuracy->kl);
    }
    kv("fault", run.fault ? *run.fault : "");
    kv("host_seconds", run.host_seconds);
    kv("host_setup_seconds", run.setup_seconds);
    kv("host_steps_seconds", run.steps_seconds);
    return o;
}

} // namespace cardsim::cli
