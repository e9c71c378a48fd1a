#include "cli/pipeline.hpp"

#include "cli/host_clock.hpp"
#include "cli/report_facts.hpp"
#include "cli/run_stages.hpp"
#include "engine/kernels/parallel.hpp"
#include "traces/time_split.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <future>

namespace cardsim::cli {

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

double run_watts(const card::CardConfig& config, const sim::RunResult& run,
                 const sim::system::SystemResult* system) {
    if (!system) return fit::estimate_power(config, config.clock.kernel_mhz, activity(config, run)).total();
    double watts = 0;
    for (auto card : system->cards) { // each card's own estimate over the whole run's time
        card.cycles = run.cycles;
        card.seconds = run.seconds;
        watts += fit::estimate_power(config, config.clock.kernel_mhz, activity(config, card)).total();
    }
    return watts;
}

namespace {

/// The report's lines of a system of cards: each card's part (its layers' ops, its weights, its DDR
/// bytes and its units' busy time), and each link's bytes, busy time and utilisation.
void system_summary(RunReport& rep, const RunRequest& req, const stages::Compiled& compiled,
                    const sim::system::SystemResult& sys) {
    rep.cards = sys.cards.size();
    rep.links = sys.links;
    const auto& cfg = req.config;
    rep.microbatches = compiled.microbatches;
    rep.system = fmt::format("system: {} cards, {} plan{}, {} of links at {} Gb/s a port, {} ns a hop\n",
                             rep.cards, lower::name(req.plan),
                             rep.microbatches > 1 ? fmt::format(" in {} microbatches", rep.microbatches) : "",
                             card::name(cfg.system.topology), cfg.link.gbps, cfg.link.latency_ns);
    for (std::size_t k = 0; k < sys.cards.size(); ++k) {
        const auto& c = sys.cards[k];
        std::uint64_t ddr = 0;
        for (auto& ch : c.channels)
            ddr += ch.read_bytes + ch.write_bytes;
        std::uint64_t busy = 0;
        for (auto& [name, b] : c.unit_busy)
            busy = std::max(busy, b);
        const std::string part = k < compiled.parts.size() ? compiled.parts[k] + "; " : "";
        rep.system +=
            fmt::format("  card {}: {}{:.1f} MB of DDR moved; busiest unit {:.1f} % of the time\n", k, part,
                        double(ddr) / 1e6, sys.cycles ? 100.0 * double(busy) / double(sys.cycles) : 0.0);
    }
    for (auto& l : sys.links) {
        if (!l.messages) continue;
        rep.link_bytes += l.bytes;
        rep.link_busy_seconds += l.busy_seconds;
        rep.system +=
            fmt::format("  link {} -> {} ({} port{}): {} messages, {:.3f} MB, busy {:.3f} ms ({:.2f} % "
                        "of the run)\n",
                        sim::system::node_name(l.from, cfg), sim::system::node_name(l.to, cfg), l.ports,
                        l.ports == 1 ? "" : "s", l.messages, double(l.bytes) / 1e6, l.busy_seconds * 1e3,
                        sys.seconds > 0 ? 100.0 * l.busy_seconds / sys.seconds : 0.0);
    }
    // The busiest link's busy fraction of the run (as serve reports it): the link that limits.
    rep.link_utilisation = sys.seconds > 0 ? busiest_link_seconds(sys) / sys.seconds : 0.0;
}

/// Fills the report's figures from what the stages produced.
void summarise(RunReport& rep, const RunRequest& req, const stages::Source& source,
               const stages::Compiled& compiled, stages::Simulated&& simulated, const stages::Feed& feed,
               stages::Verdict&& verdict) {
    rep.model = source.name;
    if (req.program) rep.program = req.program;
    rep.prompt = feed.prompt;
    rep.seqs = feed.seqs;
    rep.steps = feed.steps;
    rep.prefill_steps = feed.prefill_steps;
    rep.prefill = compiled.prefill;
    rep.arena_bytes = compiled.program.program.arena_bytes;
    if (simulated.system) system_summary(rep, req, compiled, *simulated.system);
    for (auto& p : compiled.program.io.probes)
        if (p.layer) rep.layers_checked.push_back(*p.layer);
    rep.run = std::move(simulated.run);
    rep.ddr_trace = std::move(simulated.ddr_trace);
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
    if (req.prompt_len && !rep.run.step_end.empty())
        rep.decode = phase_of(rep.run, req.config, rep.run.step_end.size(),
                              simulated.system ? busiest_link_seconds(*simulated.system) : 0.0);
    if (feed.decoder && req.mode == sim::Mode::Full && !rep.run.outputs.empty() &&
        compiled.program.program.host.entry(program::IoRole::Next)) {
        for (std::size_t q = 0; q < feed.batch.seqs(); ++q)
            rep.sequences.push_back({feed.batch.prompt(q), feed.batch.generated(q)});
        rep.generated = feed.batch.generated(0);
    }
    const DdrTraffic traffic = ddr_traffic(rep.run);
    rep.ddr_bytes += traffic.total();
    // The DRAM's peak, or what the user ports carry of this run's reads and writes if less.
    rep.peak_bytes_per_second = req.config.ddr_peak_bytes_per_second(
        double(traffic.read), double(traffic.write), double(rep.cards) * req.config.ddr.channels);
    if (compiled.cards.empty())
        rep.experts =
            expert_stats(compiled.program.program, req.config, rep.run.routing, compiled.microbatches);
    else { // each Moe layer's figures from the card that holds it (expert parallel: each card's share)
        std::vector<const program::Program*> programs;
        for (const auto& card : compiled.cards) {
            programs.push_back(&card.program);
            auto mine = expert_stats(card.program, req.config, rep.run.routing, compiled.microbatches);
            if (rep.experts.size() < mine.size()) rep.experts.resize(mine.size());
            for (std::size_t r = 0; r < mine.size(); ++r)
                if (mine[r].experts) rep.experts[r] = mine[r];
        }
        rep.expert_load =
            expert_card_load(rep.experts, programs, req.config, rep.run.routing, compiled.microbatches);
    }
    rep.fit = fit::check_fit(req.config);
    rep.watts = run_watts(req.config, rep.run, simulated.system ? &*simulated.system : nullptr);
    rep.bit_exact = verdict.bit_exact;
    rep.mismatch = std::move(verdict.mismatch);
    rep.first_mismatch = verdict.first;
    rep.unchecked = std::move(verdict.unchecked);
}

} // namespace

namespace {

/// Runs `stage` and adds its wall-clock seconds to `seconds`.
template <class F>
auto timed(double& seconds, F&& stage) {
    const auto t0 = std::chrono::steady_clock::now();
    struct Add {
        double& to;
        std::chrono::steady_clock::time_point t0;
        ~Add() { to += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
    } add{seconds, t0};
    return stage();
}

} // namespace

RunReport run_model(const RunRequest& req) {
    RunReport rep;
    stages::check_request(req);
    auto source = timed(rep.host.load, [&] { return stages::load(req); });
    auto feed = stages::feed(req, source);
    stages::check(req, source);
    auto compiled = timed(rep.host.compile, [&] { return stages::compile(req, source, feed); });
    rep.host.weights = compiled.weights;
    // The golden executor packs its matrices (checking the image's) while the card runs.
    const bool side_by_side = kernels::host_threads() > 1;
    std::future<std::unique_ptr<golden::Golden>> golden;
    if (side_by_side)
        golden = std::async(std::launch::async, [&] {
            return timed(rep.host.golden, [&] { return stages::prepare_golden(req, source, compiled); });
        });
    auto simulated = stages::simulate(req, compiled, feed);
    rep.host.simulation = simulated.run.host_seconds;
    const double simulated_outputs = simulated.outputs_seconds;
    // A --prompt-len prefill is simulated inside compile (in its child process): count it here.
    if (compiled.prefill) {
        rep.host.compile = std::max(0.0, rep.host.compile - compiled.prefill->host_seconds);
        rep.host.simulation += compiled.prefill->host_seconds;
    }
    auto prepared = golden.valid() ? golden.get() : nullptr;
    rep.host.golden_ran = prepared != nullptr;
    // The golden check and the f64 reference need only the run's outputs and read the checkpoint
    // alone: they run side by side (their host times overlap, and the golden's packing overlaps the
    // simulation), one on the kernels' pool and the other on its own thread, unless the host is
    // held to one thread.
    auto measure = [&] {
        return timed(rep.host.reference,
                     [&] { return stages::measure(req, source, compiled, simulated, feed); });
    };
    std::future<std::optional<models::Accuracy>> reference;
    if (side_by_side) reference = std::async(std::launch::async, measure);
    auto verdict = timed(rep.host.golden, [&] {
        return stages::verify(req, source, compiled, simulated, feed.seqs, std::move(prepared));
    });
    rep.accuracy = reference.valid() ? reference.get() : measure();
    auto staged = std::move(simulated.staged); // the files the simulation wrote, renamed with the rest
    summarise(rep, req, source, compiled, std::move(simulated), feed, std::move(verdict));
    rep.host.golden_ran = rep.host.golden_ran || rep.bit_exact.has_value();
    rep.host.reference_ran = rep.accuracy.has_value();
    timed(rep.host.outputs, [&] { stages::write_outputs(req, rep, source, compiled, std::move(staged)); });
    rep.host.outputs += simulated_outputs; // the DDR trace and routing the simulation streamed
    rep.host.total = process_seconds();
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
    o += system;
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
    o += expert_lines(experts);
    o += "units busy:";
    for (auto& [name, busy] : run.unit_busy)
        if (busy)
            o += fmt::format(" {} {:.1f} %", name,
                             run.cycles ? 100.0 * double(busy) / double(run.cycles) : 0.0);
    o += "\n";
    traces::TimeByUnit time; // where each unit kind's commands' time went (the network unit's too)
    for (std::size_t u = 0; u < card::unit_kind_count; ++u)
        if (auto& k = run.kind_time[u]; k.commands)
            time.add(card::name(static_cast<card::UnitKind>(u)), k.time, k.commands);
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
    o += host_line();
    return o;
}

std::string RunReport::host_line() const {
    return fmt::format("host: {}, outputs {:.2f} s; {:.2f} s in all\n",
                       traces::report::host_phases(host_facts(*this), steps, run.seconds), host.outputs,
                       host.total);
}

std::string RunReport::machine() const {
    std::string o;
    auto kv = [&](std::string_view k, auto v) { o += fmt::format("{}={}\n", k, v); };
    kv("steps", steps);
    kv("seqs", seqs);
    kv("cycles", run.cycles);
    kv("seconds", run.seconds);
    if (!experts.empty()) {
        double distinct = 0, bytes = 0;
        for (auto& e : experts) {
            distinct += e.distinct;
            bytes += e.bytes;
        }
        kv("experts_touched_per_layer", distinct / double(experts.size()));
        kv("expert_bytes_per_step", bytes);
        if (expert_load.cards > 1) { // expert parallel: the busiest card's share against an even one
            kv("expert_bytes_busiest_card", expert_load.busiest_card_bytes);
            kv("expert_card_imbalance",
               bytes > 0 ? expert_load.busiest_card_bytes * double(expert_load.cards) / bytes : 0.0);
        }
    }
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
    if (cards > 1) {
        kv("cards", cards);
        kv("microbatches", microbatches);
        kv("link_bytes", link_bytes);
        kv("link_busy_seconds", link_busy_seconds);
        kv("link_utilisation", link_utilisation);
    }
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
        kv("prefill_bound", prefill->bound());
        kv("prefill_roofline_fraction",
           prefill->seconds > 0 ? prefill->roofline_seconds / prefill->seconds : 0.0);
        kv("decode_tokens_per_second", decode->tokens_per_second());
        kv("decode_bound", decode->bound());
        kv("decode_roofline_fraction",
           decode->seconds > 0 ? decode->roofline_seconds / decode->seconds : 0.0);
    }
    kv("fault", run.fault ? *run.fault : "");
    kv("host_seconds", run.host_seconds);
    kv("host_setup_seconds", run.setup_seconds);
    kv("host_steps_seconds", run.steps_seconds);
    kv("host_total_seconds", host.total);
    kv("host_load_seconds", host.load);
    kv("host_compile_seconds", host.compile);
    kv("host_compile_weights", host.weights);
    kv("host_simulation_seconds", host.simulation);
    // A phase that did not run is empty (as host.csv has it), not zero.
    kv("host_prefill_seconds", prefill ? fmt::format("{}", prefill->host_seconds) : "");
    kv("host_golden_seconds", host.golden_ran ? fmt::format("{}", host.golden) : "");
    kv("host_reference_seconds", host.reference_ran ? fmt::format("{}", host.reference) : "");
    kv("host_outputs_seconds", host.outputs);
    return o;
}

} // namespace cardsim::cli
