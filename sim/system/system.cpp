#include "sim/system/system.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/program/program_set.hpp"
#include "engine/program/validate.hpp"
#include "sim/system/network_port.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>

namespace cardsim::sim::system {

std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>
links_of(const card::CardConfig& config) {
    const auto n = config.system.cards;
    const auto ports = config.link.ports;
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> out;
    auto both = [&](std::uint32_t a, std::uint32_t b, std::uint32_t p) {
        out.emplace_back(a, b, p);
        out.emplace_back(b, a, p);
    };
    // A switch's latency is a knob of the switch topology only: set elsewhere it would do nothing.
    if (config.system.topology != card::Topology::Switch &&
        config.link.switch_latency_ns != card::default_card_config().link.switch_latency_ns)
        throw Error(fmt::format("link.switch_latency_ns = {}: system.topology = \"{}\" has no switch; set "
                                "system.topology = \"switch\" or leave the key out",
                                config.link.switch_latency_ns, card::name(config.system.topology)));
    switch (config.system.topology) {
    case card::Topology::Switch: // node n is the switch, every card joined to it by all its ports
        for (std::uint32_t a = 0; a < n; ++a)
            both(a, n, ports);
        break;
    case card::Topology::Pairs:
        for (std::uint32_t a = 0; a + 1 < n; a += 2)
            both(a, a + 1, ports);
        break;
    case card::Topology::Ring:
        if (n == 2)
            both(0, 1, ports);
        else if (n > 2) {
            if (ports < 2)
                throw Error(fmt::format("system.topology = \"ring\" of {} cards needs two ports a card; "
                                        "link.ports = {}",
                                        n, ports));
            if (ports % 2 != 0)
                throw Error(
                    fmt::format("system.topology = \"ring\" of {} cards splits a card's ports between "
                                "its two neighbours, and link.ports = {} would leave one idle: "
                                "use an even count",
                                n, ports));
            for (std::uint32_t a = 0; a < n; ++a)
                both(a, (a + 1) % n, ports / 2);
        }
        break;
    }
    return out;
}

namespace {

/// Why card `k`'s program `program` sends or receives where `routes` (of a system of `n` cards)
/// has no route; nullopt when every send and receive has one.
std::optional<std::string> route_refusal(const card::CardConfig& config, const Routes& routes,
                                         std::uint32_t n, std::uint32_t k, const program::Program& program) {
    for (auto& c : program.commands) {
        if (c.opcode != program::Opcode::Send && c.opcode != program::Opcode::Recv &&
            c.opcode != program::Opcode::RecvAdd)
            continue;
        const bool send = c.opcode == program::Opcode::Send;
        const auto peer = c.dims.at(0);
        const auto from = send ? k : peer, to = send ? peer : k;
        if (from >= n || to >= n || from == to || !routes[from][to])
            return fmt::format(
                "card {}'s program {} card {}, and a {} of {} cards has no route from card {} to "
                "card {}",
                k, send ? "sends to" : "receives from", peer, card::name(config.system.topology), n, from,
                to);
    }
    return std::nullopt;
}

} // namespace

std::optional<std::string> network_refusal(const card::CardConfig& config,
                                           std::span<const program::Program* const> programs) {
    std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> links;
    try {
        links = links_of(config);
    } catch (const Error& e) {
        return std::string(e.what());
    }
    const auto n = config.system.cards;
    const auto routes = routes_of(links, nodes_of(config));
    for (std::uint32_t k = 0; k < programs.size(); ++k)
        if (auto why = route_refusal(config, routes, n, k, *programs[k])) return why;
    return std::nullopt;
}

std::uint32_t nodes_of(const card::CardConfig& config) {
    return config.system.cards + (config.system.topology == card::Topology::Switch ? 1 : 0);
}

std::string node_name(std::uint32_t node, const card::CardConfig& config) {
    return config.system.topology == card::Topology::Switch && node == config.system.cards
               ? "switch"
               : std::to_string(node);
}

Routes routes_of(const std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>& links,
                 std::uint32_t cards) {
    std::vector<std::vector<std::uint32_t>> next(cards);
    for (auto [a, b, p] : links)
        next[a].push_back(b);
    for (auto& n : next)
        std::sort(n.begin(), n.end());
    Routes routes(cards, std::vector<std::optional<std::uint32_t>>(cards));
    for (std::uint32_t from = 0; from < cards; ++from) {
        // Breadth first, neighbours in card order: a card's first hop is its discoverer's.
        std::vector<std::uint32_t> queue{from};
        std::vector<bool> seen(cards, false);
        seen[from] = true;
        for (std::size_t q = 0; q < queue.size(); ++q)
            for (auto b : next[queue[q]])
                if (!seen[b]) {
                    seen[b] = true;
                    routes[from][b] = queue[q] == from ? b : *routes[from][queue[q]];
                    queue.push_back(b);
                }
    }
    return routes;
}

namespace {

/// Each card's set of programs (its buckets; one for a run of one bucket).
using Sets = std::vector<std::vector<const program::Loaded*>>;

/// The system's host: one thread that writes each step's inputs into every card, starts every
/// card's command processor on it, and waits for all of them; or, for a session, asks for each
/// step (its bucket and inputs) first.
class Host : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(Host);
    /// A run of `plan`'s steps on each card's one program.
    Host(const sc_core::sc_module_name& name, std::vector<std::unique_ptr<Card>>& cards, const Sets& sets,
         const RunPlan& plan, SystemResult& result)
        : sc_core::sc_module(name), cards_(cards), sets_(sets), plan_(plan), result_(result) {
        SC_THREAD(run);
    }
    /// What the plan threw when asked for a step (bad input, such as a routing trace that does
    /// not fit the run), handed to the caller of sc_start() rather than to the kernel.
    std::exception_ptr error() const { return error_; }
    /// An open-ended session: `session`'s steps, each on its bucket of every card's set.
    Host(const sc_core::sc_module_name& name, std::vector<std::unique_ptr<Card>>& cards, const Sets& sets,
         const SessionPlan& session, SystemResult& result)
        : sc_core::sc_module(name), cards_(cards), sets_(sets), session_(&session), result_(result) {
        plan_.mode = session.mode;
        SC_THREAD(run);
    }

private:
    std::vector<std::unique_ptr<Card>>& cards_;
    const Sets& sets_;
    RunPlan plan_;                         ///< a run's (a session's mode only)
    const SessionPlan* session_ = nullptr; ///< a session's
    SessionPlan adapted_;                  ///< a run of steps one after another, as a session
    std::size_t bucket_ = 0;               ///< the bucket the cards use
    SystemResult& result_;
    sc_core::sc_event card_done_;
    std::size_t running_ = 0;
    bool failed_ = false;
    std::exception_ptr error_;

    static void put(Card& card, const program::Place& p, const std::vector<std::uint32_t>& values) {
        if (p.bytes == 0) return;
        std::vector<std::byte> bytes(p.bytes, std::byte{0});
        if (!values.empty())
            std::memcpy(bytes.data(), values.data(), std::min<std::size_t>(bytes.size(), 4 * values.size()));
        card.write(p.region, p.offset, bytes);
    }

    /// Card `k`'s inputs `in` for its next step, written into its io places (of bucket `bucket`).
    void write_inputs(std::size_t k, const StepInputs& in) { write_inputs(k, in, bucket_); }
    void write_inputs(std::size_t k, const StepInputs& in, std::size_t bucket) {
        auto& io = sets_[k][bucket]->io;
        auto& card = *cards_[k];
        put(card, io.ids, in.ids);
        put(card, io.positions, in.positions);
        put(card, io.seq_starts, in.seq_starts);
        put(card, io.qtype, in.qtype);
        put(card, io.marker_rows, in.marker_rows);
        put(card, io.marker_starts, in.marker_starts);
        put(card, io.slots, in.slots);
        // The experts' routing: a timing-only step's is an input (the graph's router numbers,
        // whichever card routes a layer); a full step's, its routes' choice.
        card.context().routing.clear();
        if (plan_.mode == Mode::TimingOnly) card.context().routing = in.routing;
    }

    /// The last card's outputs, read from its io places after a step (of bucket `bucket`).
    StepOutputs read_outputs() { return read_outputs(bucket_); }
    StepOutputs read_outputs(std::size_t bucket) {
        StepOutputs out;
        for (auto& [v, place] : sets_.back()[bucket]->io.outputs) {
            std::vector<std::byte> bytes(place.bytes);
            cards_.back()->read(place.region, place.offset, bytes);
            out.values.push_back(std::move(bytes));
        }
        return out;
    }

    /// Card `k` has ended a step now: its end cycle recorded, `ended` (the step's last card's end so
    /// far) raised to it, and the routes it took merged into `routing` (the step's, by router).
    void step_ended(std::size_t k, std::uint64_t& ended, std::vector<std::vector<std::uint32_t>>& routing) {
        auto& clock = cards_.front()->context().clock;
        const auto end = clock.cycle_at_or_after(sc_core::sc_time_stamp());
        result_.cards[k].step_end.push_back(end);
        ended = std::max(ended, end);
        const auto& mine = cards_[k]->context().routing;
        if (routing.size() < mine.size()) routing.resize(mine.size());
        for (std::size_t r = 0; r < mine.size(); ++r)
            if (!mine[r].empty()) routing[r] = mine[r];
    }

    /// The host's thread: a session's steps, a run's overlapped (lag > 1) or one after another.
    void run() {
        if (plan_.lag > 1 && !session_) return overlapped();
        if (session_ && session_->lanes > 1) return lanes();
        if (!session_) { // steps one after another: a session of the plan's steps on bucket 0
            adapted_.mode = plan_.mode;
            adapted_.next = [this](std::size_t step, double,
                                   const StepOutputs* previous) -> std::optional<SessionStep> {
                if (step >= plan_.steps) return std::nullopt;
                return SessionStep{0, plan_.inputs(step, previous), 0};
            };
            session_ = &adapted_;
        }
        session();
    }

    /// Stops the session with the host's refusal of step `s` (the last card's fault).
    void refuse(std::size_t s, const std::string& why) {
        cards_.back()->context().fault = fmt::format("step {}: {}", s, why);
    }

    /// An open-ended session (sim::simulate's over a set, on every card at once): each step on the
    /// bucket the plan names, after the simulated second it may start at; the outputs are the last card's.
    void session() {
        auto& clock = cards_.front()->context().clock;
        auto& last = result_.cards.back();
        const StepOutputs* previous = nullptr;
        const auto& plan = *session_;
        for (std::size_t s = 0;; ++s) {
            const double now = clock.seconds(clock.cycle_at_or_after(sc_core::sc_time_stamp()));
            auto step = plan.next(s, now, previous);
            if (!step) break;
            if (step->bucket >= sets_.front().size()) {
                refuse(s, fmt::format("bucket {} of a set of {}", step->bucket, sets_.front().size()));
                break;
            }
            bucket_ = step->bucket;
            auto& in = step->inputs;
            if (auto why = program::slots_refusal(sets_.front()[bucket_]->io, in.slots)) {
                refuse(s, *why);
                break;
            }
            if (step->not_before_seconds > now) { // idle until the step may start
                const auto until = clock.time_of(
                    clock.cycle_at_or_after(sc_core::sc_time(step->not_before_seconds, sc_core::SC_SEC)));
                if (until > sc_core::sc_time_stamp()) sc_core::wait(until - sc_core::sc_time_stamp());
            }
            const auto start = clock.cycle_at_or_after(sc_core::sc_time_stamp());
            for (std::size_t k = 0; k < cards_.size(); ++k) {
                cards_[k]->use(bucket_);
                write_inputs(k, in);
                result_.cards[k].step_start.push_back(start);
                result_.cards[k].step_bucket.push_back(bucket_);
            }
            running_ = cards_.size();
            for (std::size_t k = 0; k < cards_.size(); ++k)
                sc_core::sc_spawn(
                    [this, k, s, &in] {
                        if (!cards_[k]->run_step(static_cast<std::uint32_t>(s), in.positions, in.slots))
                            failed_ = true;
                        --running_;
                        card_done_.notify(sc_core::SC_ZERO_TIME);
                    },
                    fmt::format("step{}_card{}", s, k).c_str());
            while (running_ > 0)
                sc_core::wait(card_done_);
            if (failed_) break;
            std::vector<std::vector<std::uint32_t>> routing;
            for (auto& card : cards_) {
                const auto& mine = card->context().routing;
                if (routing.size() < mine.size()) routing.resize(mine.size());
                for (std::size_t r = 0; r < mine.size(); ++r)
                    if (!mine[r].empty()) routing[r] = mine[r];
            }
            if (!routing.empty()) result_.routing.push_back(std::move(routing));
            auto out = read_outputs();
            // As one card's session: a timing-only run (or one not keeping them) keeps the last only.
            if (plan.mode == Mode::TimingOnly || !plan.keep_outputs) last.outputs.clear();
            last.outputs.push_back(std::move(out));
            previous = &last.outputs.back();
            const auto end = clock.cycle_at_or_after(sc_core::sc_time_stamp());
            result_.step_end.push_back(end);
            for (auto& r : result_.cards)
                r.step_end.push_back(end);
        }
    }

    /// A session in lanes (SessionPlan::lanes > 1): up to one step a lane in flight, each card
    /// running the issued steps in order as a pipeline's stages do; a lane's step is asked for when
    /// its last one has ended on every card (the last card's outputs read).
    void lanes() {
        const auto& plan = *session_;
        const std::size_t n = cards_.size(), L = plan.lanes;
        auto& clock = cards_.front()->context().clock;
        struct Issued {
            std::size_t lane = 0;
            SessionStep step;
        };
        std::deque<Issued> issued; // by step, in issue order (a deque: cards hold a step's inputs)
        std::map<std::size_t, StepOutputs> outputs; // the last card's, by step, until taken
        std::vector<std::uint64_t> ended;           // the kernel cycle each step's last card ended
        std::vector<std::vector<std::vector<std::uint32_t>>> routing; // by step
        bool closed = false;
        sc_core::sc_event made, read;
        std::size_t alive = n;
        for (std::size_t k = 0; k < n; ++k)
            sc_core::sc_spawn(
                [&, k] {
                    for (std::size_t s = 0; !failed_; ++s) {
                        while (issued.size() <= s && !closed && !failed_)
                            sc_core::wait(made);
                        if (failed_ || issued.size() <= s) break;
                        const auto& st = issued[s].step;
                        cards_[k]->use(st.bucket);
                        write_inputs(k, st.inputs, st.bucket);
                        result_.cards[k].step_start.push_back(
                            clock.cycle_at_or_after(sc_core::sc_time_stamp()));
                        result_.cards[k].step_bucket.push_back(st.bucket);
                        if (!cards_[k]->run_step(static_cast<std::uint32_t>(s), st.inputs.positions,
                                                 st.inputs.slots)) {
                            failed_ = true;
                            read.notify(sc_core::SC_ZERO_TIME);
                            break;
                        }
                        step_ended(k, ended[s], routing[s]);
                        if (k + 1 == n) {
                            outputs[s] = read_outputs(st.bucket);
                            read.notify(sc_core::SC_ZERO_TIME);
                        }
                    }
                    --alive;
                    card_done_.notify(sc_core::SC_ZERO_TIME);
                },
                fmt::format("card{}_lanes", k).c_str());
        std::deque<std::size_t> flight; // steps in flight, in issue order (the order they end in)
        std::vector<bool> busy(L, false);
        auto& last = result_.cards.back();
        std::size_t first_lane = 0;
        auto now = [&] { return clock.seconds(clock.cycle_at_or_after(sc_core::sc_time_stamp())); };
        while (!failed_) {
            for (std::size_t i = 0; i < L && flight.size() < L && !failed_; ++i) {
                const std::size_t lane = (first_lane + i) % L;
                if (busy[lane]) continue;
                std::optional<SessionStep> step;
                try {
                    step = plan.next_in(lane, now());
                } catch (...) { // the run ends here; the caller of sc_start() rethrows it
                    error_ = std::current_exception();
                    failed_ = true;
                    break;
                }
                if (!step) continue;
                const std::size_t s = issued.size();
                if (step->bucket >= sets_.front().size()) {
                    refuse(s, fmt::format("bucket {} of a set of {}", step->bucket, sets_.front().size()));
                    failed_ = true;
                } else if (auto why =
                               program::slots_refusal(sets_.front()[step->bucket]->io, step->inputs.slots)) {
                    refuse(s, *why);
                    failed_ = true;
                }
                if (failed_) break;
                issued.push_back({lane, std::move(*step)});
                ended.push_back(0);
                routing.emplace_back();
                busy[lane] = true;
                flight.push_back(s);
                made.notify(sc_core::SC_ZERO_TIME);
            }
            if (failed_) break;
            first_lane = (first_lane + 1) % L;
            if (flight.empty()) { // every lane idles: wait for the next arrival, or end
                auto until = plan.idle_until();
                if (!until) break;
                const auto at =
                    clock.time_of(clock.cycle_at_or_after(sc_core::sc_time(*until, sc_core::SC_SEC)));
                if (at > sc_core::sc_time_stamp()) sc_core::wait(at - sc_core::sc_time_stamp());
                continue;
            }
            const std::size_t s = flight.front();
            while (!outputs.count(s) && !failed_)
                sc_core::wait(read);
            if (failed_) break;
            flight.pop_front();
            busy[issued[s].lane] = false;
            result_.step_end.push_back(ended[s]);
            if (!routing[s].empty()) result_.routing.push_back(std::move(routing[s]));
            auto out = std::move(outputs.at(s));
            outputs.erase(s);
            if (plan.mode == Mode::TimingOnly || !plan.keep_outputs) last.outputs.clear();
            last.outputs.push_back(std::move(out));
            plan.lane_done(issued[s].lane, clock.seconds(ended[s]), last.outputs.back());
        }
        closed = true;
        made.notify(sc_core::SC_ZERO_TIME);
        while (alive > 0)
            sc_core::wait(card_done_);
    }

    /// Steps overlapped (RunPlan::lag > 1): the host makes step t's inputs once step t − lag's
    /// outputs are read, and each card runs its steps in order as their inputs come, its sends
    /// and receives ordering it against the others. A step ends when its last card has.
    void overlapped() {
        const std::size_t n = cards_.size(), steps = plan_.steps, lag = plan_.lag;
        auto& clock = cards_.front()->context().clock;
        std::vector<StepInputs> inputs;             // made so far, by step
        std::map<std::size_t, StepOutputs> outputs; // the last card's, by step, while still needed
        std::size_t read_steps = 0;
        std::vector<std::size_t> finished(steps, 0); // cards done with each step
        std::vector<std::uint64_t> ended(steps, 0);  // the kernel cycle each step's last card ended
        std::vector<std::vector<std::vector<std::uint32_t>>> routing(steps);
        sc_core::sc_event made, read;
        std::size_t alive = n;
        for (std::size_t k = 0; k < n; ++k)
            sc_core::sc_spawn(
                [&, k] {
                    for (std::size_t s = 0; s < steps && !failed_; ++s) {
                        while (inputs.size() <= s && !failed_)
                            sc_core::wait(made);
                        if (failed_) break;
                        write_inputs(k, inputs[s]);
                        result_.cards[k].step_start.push_back(
                            clock.cycle_at_or_after(sc_core::sc_time_stamp()));
                        result_.cards[k].step_bucket.push_back(0);
                        if (!cards_[k]->run_step(static_cast<std::uint32_t>(s), inputs[s].positions,
                                                 inputs[s].slots)) {
                            failed_ = true;
                            made.notify(sc_core::SC_ZERO_TIME);
                            read.notify(sc_core::SC_ZERO_TIME);
                            break;
                        }
                        step_ended(k, ended[s], routing[s]);
                        if (k + 1 == n) {
                            if (plan_.mode == Mode::Full || s + lag < steps || s + 1 == steps)
                                outputs[s] = read_outputs();
                            ++read_steps;
                            read.notify(sc_core::SC_ZERO_TIME);
                        }
                        ++finished[s];
                    }
                    --alive;
                    card_done_.notify(sc_core::SC_ZERO_TIME);
                },
                fmt::format("card{}_steps", k).c_str());
        for (std::size_t s = 0; s < steps && !failed_; ++s) {
            while (s >= lag && read_steps <= s - lag && !failed_)
                sc_core::wait(read);
            if (failed_) break;
            try {
                inputs.push_back(plan_.inputs(s, s >= lag ? &outputs.at(s - lag) : nullptr));
            } catch (...) { // the run ends here; the caller of sc_start() rethrows it
                error_ = std::current_exception();
                failed_ = true;
                made.notify(sc_core::SC_ZERO_TIME);
                break;
            }
            // A timing-only run keeps only the outputs a later step's inputs read, and the last.
            if (plan_.mode == Mode::TimingOnly && s >= lag) outputs.erase(s - lag);
            made.notify(sc_core::SC_ZERO_TIME);
        }
        while (alive > 0)
            sc_core::wait(card_done_);
        auto& last = result_.cards.back();
        for (std::size_t s = 0; s < steps && finished[s] == n; ++s) {
            result_.step_end.push_back(ended[s]);
            if (!routing[s].empty()) result_.routing.push_back(std::move(routing[s]));
        }
        last.outputs.clear();
        for (auto& [step, out] : outputs)
            if (plan_.mode == Mode::Full || step + 1 == read_steps) last.outputs.push_back(std::move(out));
    }
};

} // namespace

RunResult whole(const SystemResult& s) {
    RunResult r;
    for (std::size_t k = 0; k < s.cards.size(); ++k) {
        const auto& c = s.cards[k];
        r.records.insert(r.records.end(), c.records.begin(), c.records.end());
        r.channels.insert(r.channels.end(), c.channels.begin(), c.channels.end());
        r.ddr_drained.insert(r.ddr_drained.end(), c.ddr_drained.begin(), c.ddr_drained.end());
        r.unit_busy.insert(r.unit_busy.end(), c.unit_busy.begin(), c.unit_busy.end()); // named cardK.unit_i
        for (std::size_t u = 0; u < card::unit_kind_count; ++u) {
            r.kind_busy[u] += c.kind_busy[u];
            r.kind_time[u].commands += c.kind_time[u].commands;
            r.kind_time[u].time += c.kind_time[u].time;
        }
    }
    std::stable_sort(r.records.begin(), r.records.end(), [](auto& a, auto& b) {
        return a.step != b.step ? a.step < b.step : a.card != b.card ? a.card < b.card : a.index < b.index;
    });
    if (!s.cards.empty()) {
        r.outputs = s.cards.back().outputs;
        r.step_start = s.cards.back().step_start;
        r.step_bucket = s.cards.back().step_bucket;
    }
    r.step_end = s.step_end;
    r.routing = s.routing;
    r.cycles = s.cycles;
    r.seconds = s.seconds;
    r.fault = s.fault;
    r.host_seconds = s.host_seconds;
    r.setup_seconds = s.setup_seconds;
    r.steps_seconds = s.steps_seconds;
    return r;
}

namespace {

/// What elaborating a system needs of a run or a session: its mode, units and what it keeps.
struct Elaboration {
    Mode mode = Mode::Full;
    std::optional<units::UnitSet> units;
    bool keep_data = false, keep_records = true;
};

/// Elaborates the system of `given` with card k holding `sets[k]` (its programs; the first
/// carries the DDR image), checks every program and its sends' and receives' routes, makes the
/// host (`make_host(cards, result)`), runs the simulation and collects each card's and link's totals.
template <class MakeHost>
SystemResult run_system(const card::CardConfig& given, const Sets& sets, const Elaboration& e,
                        MakeHost make_host) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint32_t n = given.system.cards;
    if (sets.size() != n)
        throw Error(fmt::format("a system of {} cards runs one program a card; given {}", n, sets.size()));
    auto config = given;
    // The ports' unit, one a card: it issues the card's sends and receives in program order, and its
    // time is the links' (link.gbps, latency_ns, frames, ports: sim/system/link.hpp), so it has no
    // width nor latency of its own to configure (a latency here would count the link's twice).
    config.units[card::UnitKind::Network] = card::UnitSpec{1, 1, 0};
    const auto links = links_of(config);
    const auto nodes = nodes_of(config);
    const auto routes = routes_of(links, nodes);
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    if (e.mode == Mode::Full) kernels::weight_format(config);
    for (std::uint32_t k = 0; k < n; ++k) {
        if (sets[k].size() != sets.front().size())
            throw Error(
                fmt::format("card {} holds {} programs and card 0 {}: every card runs each step's bucket", k,
                            sets[k].size(), sets.front().size()));
        for (std::size_t b = 0; b < sets[k].size(); ++b) {
            const auto& program = sets[k][b]->program;
            program::validate(program, &config,
                              sets[k].size() == 1 ? fmt::format("card {}'s program", k)
                                                  : fmt::format("card {}'s bucket {}", k, b));
            // Every send and receive goes over a route the topology has.
            if (auto why = route_refusal(config, routes, n, k, program)) throw Error(*why);
        }
    }
    SystemResult result;
    result.cards.resize(n);
    std::vector<std::unique_ptr<Card>> cards;
    std::vector<std::unique_ptr<NetworkPort>> ports;
    for (std::uint32_t k = 0; k < n; ++k) {
        std::vector<const program::Program*> programs;
        for (auto* l : sets[k])
            programs.push_back(&l->program);
        if (auto why = program::share_refusal(programs))
            throw Error(fmt::format("card {}'s buckets cannot share it: {}", k, *why));
        cards.push_back(std::make_unique<Card>(
            fmt::format("card{}", k).c_str(), config, std::span<const program::Program* const>(programs),
            sets[k].front()->image, e.mode, e.units ? *e.units : units::UnitSet::standard(config)));
        auto& ctx = cards.back()->context();
        ctx.keep_data = e.keep_data;
        ctx.keep_records = e.keep_records;
        std::vector<std::uint32_t> to, from;
        std::map<std::uint32_t, std::uint32_t> hops;
        for (auto [a, b, p] : links)
            if (a == k) to.push_back(b);
        for (std::uint32_t j = 0; j < n; ++j) {
            if (routes[j][k]) from.push_back(j);
            if (routes[k][j]) hops[j] = *routes[k][j];
        }
        ports.push_back(std::make_unique<NetworkPort>(fmt::format("card{}_ports", k).c_str(), k, to, from,
                                                      std::move(hops)));
        ctx.network = ports.back().get();
    }
    if (nodes > n) { // the switch: a port to every card, forwarding cut-through
        std::vector<std::uint32_t> all;
        std::map<std::uint32_t, std::uint32_t> hops;
        for (std::uint32_t j = 0; j < n; ++j) {
            all.push_back(j);
            hops[j] = j;
        }
        ports.push_back(std::make_unique<NetworkPort>(
            "switch_ports", n, all, std::vector<std::uint32_t>{}, std::move(hops),
            CutThrough{config.link, config.link.ports, config.link.switch_latency_ns}));
    }
    std::vector<std::unique_ptr<Link>> wires;
    for (auto [from, to, p] : links) {
        wires.push_back(
            std::make_unique<Link>(fmt::format("link{}to{}", from, to).c_str(), config.link, from, to, p));
        wires.back()->keep_messages(e.keep_records); // a trace's message lines
        ports[from]->to(to).bind(wires.back()->in);
        wires.back()->out.bind(ports[to]->in);
    }
    auto host = make_host(cards, result);
    const auto t1 = std::chrono::steady_clock::now();
    result.setup_seconds = std::chrono::duration<double>(t1 - t0).count();
    sc_core::sc_start();
    if (auto error = host->error()) std::rethrow_exception(error);
    result.steps_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    for (std::uint32_t k = 0; k < n; ++k) {
        collect(*cards[k], e.keep_records, result.cards[k]);
        for (auto& r : result.cards[k].records)
            r.card = k;
        if (result.cards[k].fault && !result.fault)
            result.fault = fmt::format("card {}: {}", k, *result.cards[k].fault);
    }
    for (auto& w : wires)
        result.links.push_back(w->totals());
    result.cycles = result.step_end.empty() ? 0 : result.step_end.back();
    result.seconds = cards.front()->context().clock.seconds(result.cycles);
    result.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
}

} // namespace

SystemResult simulate(const card::CardConfig& config, std::span<const program::Loaded> programs,
                      const RunPlan& plan) {
    Sets sets;
    for (auto& p : programs)
        sets.push_back({&p});
    return run_system(config, sets, {plan.mode, plan.units, plan.keep_data, plan.keep_records},
                      [&](auto& cards, SystemResult& result) {
                          return std::make_unique<Host>("host", cards, sets, plan, result);
                      });
}

SystemResult simulate(const card::CardConfig& config, std::span<const std::vector<program::Loaded>> sets,
                      const SessionPlan& plan) {
    Sets pointers;
    for (auto& set : sets) {
        pointers.emplace_back();
        for (auto& p : set)
            pointers.back().push_back(&p);
    }
    return run_system(config, pointers, {plan.mode, plan.units, plan.keep_data, plan.keep_records},
                      [&](auto& cards, SystemResult& result) {
                          return std::make_unique<Host>("host", cards, pointers, plan, result);
                      });
}

} // namespace cardsim::sim::system
