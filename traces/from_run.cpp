#include "traces/from_run.hpp"

#include "engine/error.hpp"
#include "traces/config_keys.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace cardsim::traces {
namespace {

/// The record of `r`, a command of `program` (its index step × commands + command, `pc` the command).
Record record_of(const sim::CommandRecord& r, const program::Program& program, sim::Mode mode) {
    const std::uint64_t n = program.commands.size();
    Record rec;
    rec.index = r.step * n + r.index;
    rec.pc = r.index;
    rec.unit = std::string(card::name(r.unit));
    rec.opcode = std::string(program::name(r.opcode));
    rec.start = r.start;
    rec.end = r.end;
    rec.read = r.bytes_read;
    rec.split = r.time;
    for (std::size_t c = 0; c < r.channel_read.size(); ++c)
        rec.ddr.push_back(ChannelBytes{r.channel_read[c], r.channel_written[c]});
    if (mode == sim::Mode::Full && !r.written.empty()) {
        std::vector<WrittenOperand> ops;
        for (auto& w : r.written)
            ops.push_back(
                WrittenOperand{{reinterpret_cast<const std::uint8_t*>(w.data()), w.size()}, Encoding::F32});
        set_written(rec, ops, true);
    } else {
        rec.written = r.bytes_written;
        if (mode == sim::Mode::Full) rec.digest = r.digest;
    }
    return rec;
}

/// The header of a run of `program` on `config` (one card's, FORMAT.md section 5).
Header header_of(const program::Program& program, const card::CardConfig& config, sim::Mode mode,
                 std::optional<std::size_t> prefill_steps) {
    Header h;
    h.program = program::digest(program);
    h.config = program.config_digest;
    h.knob = config.numerics;
    h.mode = mode == sim::Mode::Full ? Mode::Full : Mode::TimingOnly;
    h.clock_mhz = config.clock.kernel_mhz;
    h.ddr_channels = config.ddr.channels;
    h.meta = {{"producer", "cardsim"}, {"card", config.name}};
    record_config(h, config);
    if (prefill_steps) h.meta[std::string(prefill_steps_meta)] = std::to_string(*prefill_steps);
    return h;
}

} // namespace

Trace trace_of(const sim::RunResult& run, std::span<const sim::system::LinkTotals> links,
               std::span<const program::Loaded> programs, const card::CardConfig& config, sim::Mode mode,
               std::optional<std::size_t> prefill_steps) {
    if (programs.size() < 2)
        throw Error(
            fmt::format("a system trace is of 2 or more cards, each with its program; given {} programs",
                        programs.size()));
    Trace t;
    t.header = header_of(programs.back().program, config, mode, prefill_steps);
    for (auto& p : programs)
        t.header.cards.push_back(program::digest(p.program));
    t.header.program = system_digest(t.header.cards);
    for (auto& l : links)
        t.header.links.push_back(LinkSpec{l.from, l.to, l.ports});
    std::sort(t.header.links.begin(), t.header.links.end(),
              [](auto& a, auto& b) { return std::pair(a.from, a.to) < std::pair(b.from, b.to); });
    // The records by card, each card's by step and command (its index order).
    std::vector<const sim::CommandRecord*> order;
    for (auto& r : run.records)
        order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
        return std::tuple(a->card, a->step, a->index) < std::tuple(b->card, b->step, b->index);
    });
    for (auto* r : order) {
        if (r->card >= programs.size())
            throw Error(
                fmt::format("a record of card {}, but the system has {} cards", r->card, programs.size()));
        t.records.push_back(record_of(*r, programs[r->card].program, mode));
        t.records.back().card = r->card;
    }
    // Each message's wire interval in kernel cycles: from the cycle its first byte leaves in to the
    // first cycle after its last (at least one cycle), links in the header's order.
    const auto period_fs = static_cast<double>(std::llround(1e9 / config.clock.kernel_mhz));
    auto fs = [](const sc_core::sc_time& x) { return std::round(x.to_seconds() * 1e15); };
    for (auto& spec : t.header.links)
        for (auto& l : links)
            if (l.from == spec.from && l.to == spec.to)
                for (auto& m : l.sent) {
                    Message msg{l.from, l.to, 0, 0, m.bytes};
                    msg.start = static_cast<std::uint64_t>(std::floor(fs(m.start) / period_fs));
                    msg.end =
                        std::max(msg.start + 1, static_cast<std::uint64_t>(std::ceil(fs(m.end) / period_fs)));
                    if (!t.messages.empty() && t.messages.back().from == msg.from &&
                        t.messages.back().to == msg.to && msg.start < t.messages.back().end)
                        msg.start = t.messages.back().end; // rounding never overlaps two messages
                    msg.end = std::max(msg.end, msg.start + 1);
                    t.messages.push_back(msg);
                }
    return t;
}

Trace trace_of(const sim::RunResult& run, const program::Program& program, const card::CardConfig& config,
               sim::Mode mode, std::optional<std::size_t> prefill_steps) {
    Trace t;
    t.header = header_of(program, config, mode, prefill_steps);
    std::vector<Measured> measured;
    for (auto& r : run.records) {
        t.records.push_back(record_of(r, program, mode));
        if (r.measured_cycles) // the RTL ran it
            measured.push_back({t.records.back().index, r.work, r.measured_cycles});
    }
    if (!measured.empty()) { // an --rtl run: the RTL's cycles of the commands it ran
        t.header.meta[std::string(source_meta)] = std::string(name(Source::Rtl));
        record_measured(t.header, measured);
    }
    return t;
}

} // namespace cardsim::traces
