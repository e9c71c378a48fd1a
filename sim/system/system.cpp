#include "sim/system/system.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/program/validate.hpp"
#include "sim/system/network_port.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
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
    switch (config.system.topology) {
    case card::Topology::Switch:
        throw Error(fmt::format("system.topology = \"switch\": the simulator has no switch model yet; use "
                                "\"ring\" or \"pairs\" for {} cards",
                                n));
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
            for (std::uint32_t a = 0; a < n; ++a)
                both(a, (a + 1) % n, 1);
        }
        break;
    }
    return out;
}

namespace {

/// The system's host: one thread that writes each step's inputs into every card, starts every
/// card's command processor on it, and waits for all of them.
class Host : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(Host);
    Host(const sc_core::sc_module_name& name, std::vector<std::unique_ptr<Card>>& cards,
         std::span<const program::Loaded> programs, const RunPlan& plan, SystemResult& result)
        : sc_core::sc_module(name), cards_(cards), programs_(programs), plan_(plan), result_(result) {
        SC_THREAD(run);
    }

private:
    std::vector<std::unique_ptr<Card>>& cards_;
    std::span<const program::Loaded> programs_;
    const RunPlan& plan_;
    SystemResult& result_;
    sc_core::sc_event card_done_;
    std::size_t running_ = 0;
    bool failed_ = false;

    static void put(Card& card, const program::Place& p, const std::vector<std::uint32_t>& values) {
        if (p.bytes == 0) return;
        std::vector<std::byte> bytes(p.bytes, std::byte{0});
        if (!values.empty())
            std::memcpy(bytes.data(), values.data(), std::min<std::size_t>(bytes.size(), 4 * values.size()));
        card.write(p.region, p.offset, bytes);
    }

    void run() {
        const StepOutputs* previous = nullptr;
        auto& clock = cards_.front()->context().clock;
        auto& last = result_.cards.back();
        for (std::size_t s = 0; s < plan_.steps; ++s) {
            auto in = plan_.inputs(s, previous);
            const auto start = clock.cycle_at_or_after(sc_core::sc_time_stamp());
            for (std::size_t k = 0; k < cards_.size(); ++k) {
                auto& io = programs_[k].io;
                auto& card = *cards_[k];
                put(card, io.ids, in.ids);
                put(card, io.positions, in.positions);
                put(card, io.seq_starts, in.seq_starts);
                put(card, io.qtype, in.qtype);
                put(card, io.marker_rows, in.marker_rows);
                put(card, io.marker_starts, in.marker_starts);
                put(card, io.slots, in.slots);
                // The experts' routing: a timing-only step's is an input (the graph's router
                // numbers, whichever card routes a layer); a full step's, its routes' choice.
                card.context().routing.clear();
                if (plan_.mode == Mode::TimingOnly) card.context().routing = in.routing;
                result_.cards[k].step_start.push_back(start);
                result_.cards[k].step_bucket.push_back(0);
            }
            running_ = cards_.size();
            for (std::size_t k = 0; k < cards_.size(); ++k)
                sc_core::sc_spawn(
                    [this, k, s, positions = in.positions, slots = in.slots]() mutable {
                        if (!cards_[k]->run_step(static_cast<std::uint32_t>(s), std::move(positions),
                                                 std::move(slots)))
                            failed_ = true;
                        --running_;
                        card_done_.notify(sc_core::SC_ZERO_TIME);
                    },
                    fmt::format("step{}_card{}", s, k).c_str());
            while (running_ > 0)
                sc_core::wait(card_done_);
            if (failed_) break;
            // The step's routing, gathered: each router's rows from the card that routed it.
            std::vector<std::vector<std::uint32_t>> routing;
            for (auto& card : cards_) {
                const auto& mine = card->context().routing;
                if (routing.size() < mine.size()) routing.resize(mine.size());
                for (std::size_t r = 0; r < mine.size(); ++r)
                    if (!mine[r].empty()) routing[r] = mine[r];
            }
            if (!routing.empty()) result_.routing.push_back(std::move(routing));
            StepOutputs out;
            auto& io = programs_.back().io;
            for (auto& [v, place] : io.outputs) {
                std::vector<std::byte> bytes(place.bytes);
                cards_.back()->read(place.region, place.offset, bytes);
                out.values.push_back(std::move(bytes));
            }
            if (plan_.mode == Mode::TimingOnly) last.outputs.clear();
            last.outputs.push_back(std::move(out));
            previous = &last.outputs.back();
            const auto end = clock.cycle_at_or_after(sc_core::sc_time_stamp());
            result_.step_end.push_back(end);
            for (auto& r : result_.cards)
                r.step_end.push_back(end);
        }
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
        r.setup_seconds += c.setup_seconds;
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
    r.steps_seconds = s.host_seconds;
    return r;
}

SystemResult simulate(const card::CardConfig& given, std::span<const program::Loaded> programs,
                      const RunPlan& plan) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint32_t n = given.system.cards;
    if (programs.size() != n)
        throw Error(
            fmt::format("a system of {} cards runs one program a card; given {}", n, programs.size()));
    auto config = given;
    config.units[card::UnitKind::Network] = card::UnitSpec{1, 1, 0}; // the ports' unit: one a card
    const auto links = links_of(config);
    sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    if (plan.mode == Mode::Full) kernels::weight_format(config);
    for (std::uint32_t k = 0; k < n; ++k) {
        program::validate(programs[k].program, &config, fmt::format("card {}'s program", k));
        // Every send and receive goes over a link the topology has.
        for (auto& c : programs[k].program.commands) {
            if (c.opcode != program::Opcode::Send && c.opcode != program::Opcode::Recv &&
                c.opcode != program::Opcode::RecvAdd)
                continue;
            const bool send = c.opcode == program::Opcode::Send;
            const auto peer = c.dims.at(0);
            const auto from = send ? k : peer, to = send ? peer : k;
            if (std::none_of(links.begin(), links.end(),
                             [&](auto& l) { return std::get<0>(l) == from && std::get<1>(l) == to; }))
                throw Error(fmt::format("card {}'s program {} card {}, and a {} of {} cards has no link from "
                                        "card {} to card {}",
                                        k, send ? "sends to" : "receives from", peer,
                                        card::name(config.system.topology), n, from, to));
        }
    }
    SystemResult result;
    result.cards.resize(n);
    std::vector<std::unique_ptr<Card>> cards;
    std::vector<std::unique_ptr<NetworkPort>> ports;
    for (std::uint32_t k = 0; k < n; ++k) {
        const program::Program* p = &programs[k].program;
        cards.push_back(std::make_unique<Card>(
            fmt::format("card{}", k).c_str(), config, std::span<const program::Program* const>(&p, 1),
            programs[k].image, plan.mode, plan.units ? *plan.units : units::UnitSet::standard(config)));
        auto& ctx = cards.back()->context();
        ctx.keep_data = plan.keep_data;
        ctx.keep_records = plan.keep_records;
        std::vector<std::uint32_t> to, from;
        for (auto [a, b, p] : links) {
            if (a == k) to.push_back(b);
            if (b == k) from.push_back(a);
        }
        ports.push_back(std::make_unique<NetworkPort>(fmt::format("card{}_ports", k).c_str(), k, to, from));
        ctx.network = ports.back().get();
    }
    std::vector<std::unique_ptr<Link>> wires;
    for (auto [from, to, p] : links) {
        wires.push_back(
            std::make_unique<Link>(fmt::format("link{}to{}", from, to).c_str(), config.link, from, to, p));
        wires.back()->keep_messages(plan.keep_records); // a trace's message lines
        ports[from]->to(to).bind(wires.back()->in);
        wires.back()->out.bind(ports[to]->in);
    }
    Host host("host", cards, programs, plan, result);
    sc_core::sc_start();
    for (std::uint32_t k = 0; k < n; ++k) {
        collect(*cards[k], plan.keep_records, result.cards[k]);
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

} // namespace cardsim::sim::system
