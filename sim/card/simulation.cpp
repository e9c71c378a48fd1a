#include "sim/card/simulation.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/program/program_set.hpp"
#include "engine/program/validate.hpp"

#include <algorithm>
#include <chrono>

#include <cstring>
#include <fmt/core.h>

namespace cardsim::sim {
namespace {

/// The host: one thread that asks for each step, idles until it may start, writes its inputs into
/// its bucket's io places, runs it, and reads its outputs.
class Host : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(Host);
    Host(const sc_core::sc_module_name& name, Card& card, std::span<const program::Loaded> buckets,
         const SessionPlan& plan, RunResult& result)
        : sc_core::sc_module(name), card_(card), buckets_(buckets), plan_(plan), result_(result) {
        SC_THREAD(run);
    }
    /// What the plan threw when asked for a step (bad input, such as a routing trace that does
    /// not fit the run), handed to the caller of sc_start() rather than to the kernel.
    std::exception_ptr error() const { return error_; }

private:
    Card& card_;
    std::span<const program::Loaded> buckets_;
    const SessionPlan& plan_;
    RunResult& result_;
    std::exception_ptr error_;

    void put(const program::Place& p, const std::vector<std::uint32_t>& values) {
        if (p.bytes == 0) return;
        std::vector<std::byte> bytes(p.bytes, std::byte{0});
        if (!values.empty())
            std::memcpy(bytes.data(), values.data(), std::min<std::size_t>(bytes.size(), 4 * values.size()));
        card_.write(p.region, p.offset, bytes);
    }

    /// Stops the run with the host's refusal of step `s`.
    void refuse(std::size_t s, const std::string& why) {
        card_.context().fault = fmt::format("step {}: {}", s, why);
    }

    void run() {
        const auto t0 = std::chrono::steady_clock::now();
        const StepOutputs* previous = nullptr;
        auto& clock = card_.context().clock;
        for (std::size_t s = 0;; ++s) {
            const double now = clock.seconds(clock.cycle_at_or_after(sc_core::sc_time_stamp()));
            std::optional<SessionStep> step;
            try {
                step = plan_.next(s, now, previous);
            } catch (...) { // the run ends here; the caller of sc_start() rethrows it
                error_ = std::current_exception();
                break;
            }
            if (!step) break;
            if (step->bucket >= buckets_.size()) {
                refuse(s, fmt::format("bucket {} of a set of {}", step->bucket, buckets_.size()));
                break;
            }
            auto& io = buckets_[step->bucket].io;
            auto& in = step->inputs;
            if (auto why = program::slots_refusal(io, in.slots)) {
                refuse(s, *why);
                break;
            }
            // Idle until the step may start: one wait, to the kernel edge at or after it.
            if (step->not_before_seconds > now) {
                const auto until = clock.time_of(
                    clock.cycle_at_or_after(sc_core::sc_time(step->not_before_seconds, sc_core::SC_SEC)));
                if (until > sc_core::sc_time_stamp()) sc_core::wait(until - sc_core::sc_time_stamp());
            }
            card_.use(step->bucket);
            put(io.ids, in.ids);
            put(io.positions, in.positions);
            put(io.seq_starts, in.seq_starts);
            put(io.qtype, in.qtype);
            put(io.marker_rows, in.marker_rows);
            put(io.marker_starts, in.marker_starts);
            put(io.slots, in.slots);
            // The experts' routing: a timing-only step's is an input; a full step's, its routes' choice.
            auto& routing = card_.context().routing;
            routing.clear();
            if (plan_.mode == Mode::TimingOnly) routing = std::move(in.routing);
            result_.step_start.push_back(clock.cycle_at_or_after(sc_core::sc_time_stamp()));
            result_.step_bucket.push_back(step->bucket);
            if (!card_.run_step(static_cast<std::uint32_t>(s), std::move(in.positions), std::move(in.slots)))
                break;
            if (!routing.empty()) result_.routing.push_back(routing);
            StepOutputs out;
            for (auto& [v, place] : io.outputs) {
                std::vector<std::byte> bytes(place.bytes);
                card_.read(place.region, place.offset, bytes);
                out.values.push_back(std::move(bytes));
            }
            // A timing-only run's outputs hold no data: keep the last step's only, so host memory
            // stays constant per step over a long run (and so without keep_outputs).
            if (plan_.mode == Mode::TimingOnly || !plan_.keep_outputs) result_.outputs.clear();
            result_.outputs.push_back(std::move(out));
            previous = &result_.outputs.back();
            result_.step_end.push_back(clock.cycle_at_or_after(sc_core::sc_time_stamp()));
        }
        result_.steps_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // Returning ends the simulation: the units wait for work that never comes, so no event is left.
    }
};

} // namespace

void collect(Card& card, bool keep_records, RunResult& result) {
    const bool keep = keep_records;
    auto& ctx = card.context();
    result.fault = ctx.fault;
    result.records = std::move(ctx.records);
    for (const auto& r : result.records) {
        auto& k = result.kind_time[static_cast<std::size_t>(r.unit)];
        ++k.commands;
        k.time += r.time;
    }
    if (!keep)
        for (auto& t : ctx.kind_totals)
            if (t.index) {
                result.records.push_back(t);
                auto& k = result.kind_time[static_cast<std::size_t>(t.unit)];
                k.commands += t.index;
                k.time += t.time;
            }
    std::sort(result.records.begin(), result.records.end(),
              [](auto& a, auto& b) { return a.step != b.step ? a.step < b.step : a.index < b.index; });
    result.cycles = result.step_end.empty() ? 0 : result.step_end.back();
    result.seconds = ctx.clock.seconds(result.cycles);
    const auto& clock = card.ddr().clock();
    for (std::uint32_t i = 0; i < card.ddr().channels(); ++i) {
        auto& st = card.ddr().channel(i).timing().stats();
        result.channels.push_back(ChannelTotals{st.read_bytes, st.write_bytes, st.row_hits, st.row_misses,
                                                st.row_conflicts, clock.seconds(double(st.refresh_cycles))});
    }
    card.ddr().flush(); // after the totals above: they stay what the run itself issued
    for (std::uint32_t i = 0; i < card.ddr().channels(); ++i)
        result.ddr_drained.push_back(card.ddr().channel(i).timing().stats());
    for (auto& u : card.units()) {
        result.unit_busy.emplace_back(u->name(), u->busy_cycles());
        result.kind_busy[static_cast<std::size_t>(u->unit_kind())] += u->busy_cycles();
    }
}

RunResult simulate(const card::CardConfig& config, const program::Loaded& loaded, const RunPlan& plan) {
    SessionPlan session;
    session.next = [&](std::size_t step, double, const StepOutputs* previous) -> std::optional<SessionStep> {
        if (step >= plan.steps) return std::nullopt;
        return SessionStep{0, plan.inputs(step, previous), 0};
    };
    session.mode = plan.mode;
    session.units = plan.units;
    session.keep_data = plan.keep_data;
    session.keep_records = plan.keep_records;
    session.ddr_observer = plan.ddr_observer;
    session.flip = plan.flip;
    return simulate(config, std::span<const program::Loaded>(&loaded, 1), session);
}

RunResult simulate(const card::CardConfig& config, std::span<const program::Loaded> buckets,
                   const SessionPlan& plan) {
    std::vector<const program::Program*> programs_of;
    for (auto& b : buckets)
        programs_of.push_back(&b.program);
    if (auto why = program::share_refusal(programs_of))
        throw Error("the buckets cannot share one card: " + *why);
    RunResult result;
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    // A fault ends the run (the host stops asking for steps); SystemC's info lines are not reports.
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    auto t0 = std::chrono::steady_clock::now();
    // Full runs compute with the config's weight format: refuse one the matvec does not run up front.
    if (plan.mode == Mode::Full) kernels::weight_format(config);
    // The card decodes every command against its opcode's slots and the config's formats first.
    std::vector<const program::Program*> programs;
    for (std::size_t k = 0; k < buckets.size(); ++k) {
        program::validate(buckets[k].program, &config,
                          buckets.size() == 1 ? std::string("the program") : fmt::format("bucket {}", k));
        programs.push_back(&buckets[k].program);
    }
    Card card("card", config, programs, buckets.front().image, plan.mode,
              plan.units ? *plan.units : units::UnitSet::standard(config));
    card.context().keep_data = plan.keep_data;
    card.context().flip = plan.flip;
    card.context().keep_records = plan.keep_records;
    Host host("host", card, buckets, plan, result);
    if (plan.ddr_observer) card.ddr().set_observer(plan.ddr_observer);
    result.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sc_core::sc_start();
    card.ddr().set_observer(nullptr);
    if (auto error = host.error()) std::rethrow_exception(error);
    result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    collect(card, plan.keep_records, result);
    return result;
}

} // namespace cardsim::sim
