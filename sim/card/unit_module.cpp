#include "sim/card/unit_module.hpp"

#include "engine/error.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/program/slots.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <xxhash.h>

namespace cardsim::sim {

using program::Access;
using program::Region;

void CardContext::bus_error(std::uint32_t index, const std::string& what) {
    if (!fault)
        fault = fmt::format("bus error at step {}, command {} ({}): {}", step, index,
                            program::name(program->commands[index].opcode), what);
    // The command processor wakes to the fault and ends the step; commands already in flight on
    // other units complete, so every thread comes to rest (none is left suspended mid-command).
    command_done.notify(sc_core::SC_ZERO_TIME);
}

UnitModule::UnitModule(const sc_core::sc_module_name& name, program::Unit kind, std::uint32_t instance,
                       const card::UnitSpec& spec, CardContext& context)
    : sc_core::sc_module(name), ddr("ddr"), sram("sram"), kind_(kind), instance_(instance), spec_(spec),
      behaviour_(context.units[kind]), ctx_(context) {
    ddr.register_invalidate_direct_mem_ptr(this, &UnitModule::invalidate_ddr);
    payload_.set_extension(&stalls_);
    SC_THREAD(run);
}

UnitModule::~UnitModule() {
    payload_.clear_extension(&stalls_);
}

void UnitModule::start(std::uint32_t index, const TimeSplit& waits) {
    busy_ = true;
    index_ = index;
    waits_ = waits;
    start_.notify(sc_core::SC_ZERO_TIME);
}

sc_core::sc_time UnitModule::one(const program::Operand& o, tlm::tlm_command cmd, std::uint64_t address,
                                 std::uint64_t bytes, unsigned char* data, bool timed, sc_core::sc_time issue,
                                 std::uint32_t index, PhaseCritical* critical) {
    const bool in_ddr = ctx_.region(o.region).space == program::Space::Ddr;
    auto& socket = in_ddr ? ddr : sram;
    payload_.set_command(cmd);
    payload_.set_address(address);
    payload_.set_data_length(static_cast<unsigned>(bytes));
    payload_.set_streaming_width(static_cast<unsigned>(bytes));
    payload_.set_data_ptr(data);
    payload_.set_byte_enable_ptr(nullptr);
    payload_.set_dmi_allowed(false);
    payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = issue;
    if (timed) {
        socket->b_transport(payload_, delay);
        if (critical && bytes > 0) // a request of no bytes moves nothing and is not timed
            critical->complete(delay, in_ddr, stalls_);
        if (payload_.is_response_error())
            ctx_.bus_error(index, fmt::format("{} at {}+{:#x} (address {:#x}, {} bytes) failed: {}",
                                              cmd == tlm::TLM_READ_COMMAND ? "read" : "write",
                                              program::name(o.region), address - ctx_.region(o.region).base,
                                              address, bytes, payload_.get_response_string()));
    } else if (socket->transport_dbg(payload_) != bytes) {
        ctx_.bus_error(index,
                       fmt::format("{} of {} bytes at {}+{:#x} (address {:#x}) failed",
                                   cmd == tlm::TLM_READ_COMMAND ? "read" : "write", bytes,
                                   program::name(o.region), address - ctx_.region(o.region).base, address));
    }
    return delay;
}

sc_core::sc_time UnitModule::transport(const program::Operand& o, tlm::tlm_command cmd,
                                       const std::vector<units::Span>& spans, sc_core::sc_time issue,
                                       std::uint32_t index, PhaseCritical& critical) {
    auto& r = ctx_.region(o.region);
    std::uint64_t address = r.base + o.offset;
    if (o.offset % 4 != 0) {
        ctx_.bus_error(index,
                       fmt::format("misaligned access at {}+{:#x} (address {:#x}): operands are f32-aligned",
                                   program::name(o.region), o.offset, address));
        return issue;
    }
    sc_core::sc_time done = issue;
    for (auto& s : spans)
        done =
            std::max(done, one(o, cmd, address + s.offset, s.bytes, nullptr, true, issue, index, &critical));
    return done;
}

void UnitModule::invalidate_ddr(sc_dt::uint64, sc_dt::uint64) {
    have_ddr_dmi_ = false;
}

std::span<std::byte> UnitModule::in_place(const program::Operand& o, std::uint32_t index) {
    const auto& r = ctx_.region(o.region);
    const bool in_ddr = r.space == program::Space::Ddr;
    tlm::tlm_dmi& dmi = in_ddr ? ddr_dmi_ : sram_dmi_;
    bool& have = in_ddr ? have_ddr_dmi_ : have_sram_dmi_;
    const std::uint64_t a = r.base + o.offset;
    // An operand the command writes needs a grant for writing; one it only reads, for reading (the
    // DDR grants a lent range, the image's weights, read-only).
    const bool writes = o.access != Access::Read;
    auto covers = [&] {
        return have && a >= dmi.get_start_address() && a + o.bytes <= dmi.get_end_address() + 1 &&
               (writes ? dmi.is_read_write_allowed() : dmi.is_read_allowed());
    };
    if (!covers()) { // none yet, or another part of the memory, or invalidated
        tlm::tlm_generic_payload gp;
        gp.set_command(writes ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
        gp.set_address(a);
        gp.set_data_length(static_cast<unsigned int>(std::min<std::uint64_t>(o.bytes, 0xffffffffu)));
        dmi.init();
        have = in_ddr ? ddr->get_direct_mem_ptr(gp, dmi) : sram->get_direct_mem_ptr(gp, dmi);
    }
    if (!covers() || o.offset > r.size || o.bytes > r.size - o.offset) {
        ctx_.bus_error(index,
                       fmt::format("{}+{:#x} ({} bytes at address {:#x}) lies outside the {} region of {} "
                                   "bytes or the memory",
                                   program::name(o.region), o.offset, o.bytes, a, program::name(o.region),
                                   r.size));
        return {};
    }
    return {reinterpret_cast<std::byte*>(dmi.get_dmi_ptr()) + (a - dmi.get_start_address()),
            static_cast<std::size_t>(o.bytes)};
}

bool UnitModule::overlaps_a_write(const program::Command& c, std::size_t k) {
    const auto& a = c.operands[k];
    for (std::size_t j = 0; j < c.operands.size(); ++j) {
        const auto& b = c.operands[j];
        if (j == k || b.region == Region::None || b.bytes == 0) continue;
        if (a.access == Access::Read && b.access == Access::Read) continue;
        const auto& ra = ctx_.region(a.region);
        const auto& rb = ctx_.region(b.region);
        if (ra.space != rb.space) continue;
        const std::uint64_t a0 = ra.base + a.offset, b0 = rb.base + b.offset;
        if (a0 < b0 + b.bytes && b0 < a0 + a.bytes) return true;
    }
    return false;
}

void UnitModule::attribute(TimeSplit& time, std::uint64_t cycles, const PhaseCritical& critical) {
    if (!critical.any) {
        time[TimePart::Compute] += cycles;
        return;
    }
    if (!critical.ddr) {
        time[TimePart::Sram] += cycles;
        return;
    }
    const auto& s = critical.split();
    const std::array<std::uint64_t, 5> weights{s.queueing, s.bank, s.refresh, s.turnaround, s.data};
    static_assert(
        static_cast<std::size_t>(TimePart::DdrData) - static_cast<std::size_t>(TimePart::DdrQueueing) == 4);
    share(cycles, weights,
          std::span<std::uint64_t>(time.cycles).subspan(static_cast<std::size_t>(TimePart::DdrQueueing), 5),
          0);
}

void UnitModule::record_routing(const program::Command& c, std::uint32_t index) {
    const auto d = program::args<program::slots::Route>(c).dims;
    const auto at = program::at(program::slots::Route::Operand::experts);
    auto chosen = in_place(c.operands[at], index);
    if (ctx_.fault) return;
    if (ctx_.routing.size() <= d.router) ctx_.routing.resize(d.router + 1);
    auto u = units::u32s(chosen);
    ctx_.routing[d.router].assign(u.begin(), u.end());
}

void UnitModule::run() {
    const std::uint32_t channels = ctx_.interleave.channels();
    ranges_.assign(channels, {});
    for (;;) {
        sc_core::wait(start_);
        const std::uint32_t index = index_;
        const auto& c = ctx_.program->commands[index];
        // A receive starts when its message has arrived whole: its wait for the sending card is
        // its `link` part (after its dependencies on this card).
        Message message;
        std::uint64_t link_wait = 0;
        const bool receive = c.opcode == program::Opcode::Recv || c.opcode == program::Opcode::RecvAdd;
        const bool network = c.opcode == program::Opcode::Send || receive;
        if (network && !ctx_.network) {
            ctx_.bus_error(index, "the card is in no system: it has no link to send or receive over");
            return;
        }
        if (receive) {
            const auto before = ctx_.clock.cycle_at_or_after(sc_core::sc_time_stamp());
            const auto peer = static_cast<std::uint32_t>(c.dims.at(0)); // Recv's and RecvAdd's `peer`
            if (auto why = ctx_.network->receive(peer, message)) {
                ctx_.bus_error(index, *why);
                return;
            }
            if (message.bytes != c.operands[0].bytes) {
                ctx_.bus_error(index, fmt::format("a message of {} bytes from card {} for {} bytes",
                                                  message.bytes, peer, c.operands[0].bytes));
                return;
            }
            link_wait = ctx_.clock.cycle_at_or_after(sc_core::sc_time_stamp()) - before;
            const auto edge = ctx_.clock.time_of(ctx_.clock.cycle_at_or_after(sc_core::sc_time_stamp()));
            if (edge > sc_core::sc_time_stamp()) sc_core::wait(edge - sc_core::sc_time_stamp());
        }
        const auto t0 = sc_core::sc_time_stamp();
        CommandRecord rec;
        rec.step = ctx_.step;
        rec.index = index;
        rec.unit = kind_;
        rec.instance = instance_;
        rec.opcode = c.opcode;
        rec.start = ctx_.clock.cycle_at_or_after(t0);
        rec.channel_read.assign(channels, 0);
        const units::Step step{ctx_.positions, ctx_.slots, ctx_.routing};
        // A command on slot-addressed stores moves its slots' bytes only: what it writes (the
        // record's bytes and digest) is those spans, not the whole store of every slot.
        const auto& ops = program::spec(c.opcode).operands;
        const bool slotted = program::omits_absent_slots(program::spec(c.opcode)) &&
                             c.operands.size() == ops.size() && c.operands.back().region != Region::None;
        if (!behaviour_.runs(c.opcode)) {
            ctx_.bus_error(index, fmt::format("the {} unit does not run {} commands", card::name(kind_),
                                              program::name(c.opcode)));
            return;
        }
        rec.channel_written.assign(channels, 0);
        auto is_ddr = [&](const program::Operand& o) {
            return o.region != Region::None && o.bytes && ctx_.region(o.region).space == program::Space::Ddr;
        };
        // Each channel's share of the spans of a DDR operand, added to `per`.
        auto count_channels = [&](const program::Operand& o, const std::vector<units::Span>& spans,
                                  std::vector<std::uint64_t>& per) {
            if (!is_ddr(o)) return;
            for (auto& s : spans) {
                if (s.bytes == 0) continue;
                ctx_.interleave.split(ctx_.region(o.region).base + o.offset + s.offset, s.bytes, ranges_);
                for (std::uint32_t ch = 0; ch < channels; ++ch)
                    per[ch] += ranges_[ch].size();
            }
        };
        rec.time = waits_;
        rec.time[TimePart::Link] += link_wait;
        // The parts of operand `i` the command moves (a unit that cannot say, e.g. an expert matvec
        // without the step's routing, stops the run naming the command).
        auto traffic = [&](std::size_t i) -> std::optional<std::vector<units::Span>> {
            try {
                return behaviour_.traffic(c, i, step);
            } catch (const Error& e) {
                ctx_.bus_error(index, e.what());
                return std::nullopt;
            }
        };
        // Reads, issued now or, for an operand read through another (an indirect address), when
        // that one's reads complete; their data moves without time (below).
        sc_core::sc_time reads = sc_core::SC_ZERO_TIME;
        PhaseCritical read_critical, write_critical;
        read_done_.assign(c.operands.size(), sc_core::SC_ZERO_TIME);
        for (std::size_t i = 0; i < c.operands.size(); ++i) {
            auto& o = c.operands[i];
            if (o.region == Region::None || o.bytes == 0 || o.access == Access::Write) continue;
            auto got = traffic(i);
            if (!got) return;
            auto& spans = *got;
            sc_core::sc_time issue = sc_core::SC_ZERO_TIME;
            if (auto after = behaviour_.issue_after(c, i); after && after->after < i)
                issue = read_done_[after->after] + ctx_.clock.time_of(after->cycles);
            read_done_[i] = transport(o, tlm::TLM_READ_COMMAND, spans, issue, index, read_critical);
            reads = std::max(reads, read_done_[i]);
            for (auto& sp : spans)
                rec.bytes_read += sp.bytes; // what moved (an attention reads its positions)
            count_channels(o, spans, rec.channel_read);
        }
        if (ctx_.fault) return;
        // Compute (full runs) on the operands in place (DMI), or on copies for an operand that
        // overlaps another one the command writes.
        const bool full = !ctx_.timing_only;
        if (full) {
            views_.assign(c.operands.size(), {});
            buffers_.resize(c.operands.size());
            for (std::size_t i = 0; i < c.operands.size(); ++i) {
                auto& o = c.operands[i];
                if (o.region == Region::None || o.bytes == 0) continue;
                auto place = in_place(o, index);
                if (ctx_.fault) return;
                if (!overlaps_a_write(c, i)) {
                    views_[i] = place;
                    continue;
                }
                auto& buf = buffers_[i];
                buf.assign(o.bytes, std::byte{0});
                if (o.access != Access::Write) std::copy(place.begin(), place.end(), buf.begin());
                views_[i] = buf;
            }
            if (c.opcode == program::Opcode::Recv && !message.data.empty())
                std::copy(message.data.begin(), message.data.end(), views_[0].begin());
            if (c.opcode == program::Opcode::RecvAdd && !message.data.empty()) { // received + held
                const auto got = units::f32s(std::span<std::byte>(message.data));
                auto held = units::f32s(views_[0]);
                kernels::add(got, held, held);
            }
            try { // a unit that refuses its operands (an RTL result that differs) stops the run
                behaviour_.compute(c, views_);
            } catch (const Error& e) {
                ctx_.bus_error(index, e.what());
                return;
            }
            rec.measured_cycles = behaviour_.measured_cycles();
            if (c.opcode == program::Opcode::Route) record_routing(c, index);
            for (std::size_t i = 0; i < c.operands.size(); ++i) {
                auto& o = c.operands[i];
                if (o.region == Region::None || o.bytes == 0 || o.access == Access::Read) continue;
                if (views_[i].data() == buffers_[i].data() && !buffers_[i].empty())
                    std::copy(buffers_[i].begin(), buffers_[i].end(), in_place(o, index).begin());
            }
            if (ctx_.flip && ctx_.flip->step == ctx_.step && ctx_.flip->command == index)
                for (std::size_t i = 0; i < c.operands.size(); ++i) { // the first operand it writes
                    auto& o = c.operands[i];
                    if (o.region == Region::None || o.bytes == 0 || o.access == Access::Read) continue;
                    auto bytes = in_place(o, index);
                    auto& b = bytes[std::min<std::uint64_t>(ctx_.flip->byte, bytes.size() - 1)];
                    b ^= std::byte(1u << (ctx_.flip->bit & 7));
                    break;
                }
        }
        rec.work = behaviour_.work(c, step);
        rec.compute_cycles = units::compute_cycles(rec.work, ctx_.config.lanes(kind_));
        const auto compute_time = ctx_.clock.time_of(rec.compute_cycles);
        auto writes_at = std::max(reads, compute_time);
        if (c.opcode == program::Opcode::Send) { // the message leaves once read; done when it has left
            const auto peer = static_cast<std::uint32_t>(program::args<program::slots::Send>(c).dims.peer);
            sc_core::sc_time sent = reads;
            const std::span<const std::byte> data =
                full ? std::span<const std::byte>(views_[0]) : std::span<const std::byte>{};
            if (auto why = ctx_.network->send(peer, data, c.operands[0].bytes, sent)) {
                ctx_.bus_error(index, *why);
                return;
            }
            writes_at = std::max(writes_at, sent);
        }
        // Writes, issued when the reads and the compute are done.
        sc_core::sc_time end = writes_at;
        XXH64_state_t* digest = full ? XXH64_createState() : nullptr;
        if (digest) XXH64_reset(digest, 0);
        for (std::size_t i = 0; i < c.operands.size(); ++i) {
            auto& o = c.operands[i];
            if (o.region == Region::None || o.bytes == 0 || o.access == Access::Read) continue;
            auto got = traffic(i);
            if (!got) return;
            auto& spans = *got;
            end =
                std::max(end, transport(o, tlm::TLM_WRITE_COMMAND, spans, writes_at, index, write_critical));
            count_channels(o, spans, rec.channel_written);
            if (!slotted) {
                rec.bytes_written += o.bytes;
                if (!full) continue;
                auto bytes = in_place(o, index);
                XXH64_update(digest, bytes.data(), bytes.size());
                if (ctx_.keep_data) rec.written.emplace_back(bytes.begin(), bytes.end());
                continue;
            }
            for (auto& sp : spans)
                rec.bytes_written += sp.bytes;
            if (!full) continue;
            auto bytes = in_place(o, index);
            std::vector<std::byte> moved;
            for (auto& sp : spans) {
                auto part = bytes.subspan(sp.offset, sp.bytes);
                XXH64_update(digest, part.data(), part.size());
                if (ctx_.keep_data) moved.insert(moved.end(), part.begin(), part.end());
            }
            if (ctx_.keep_data) rec.written.push_back(std::move(moved));
        }
        rec.digest = digest ? XXH64_digest(digest) : 0;
        if (digest) XXH64_freeState(digest);
        if (ctx_.fault) return;
        // Finish on the kernel edge after the last write, plus the pipeline latency.
        rec.end = ctx_.clock.cycle_at_or_after(t0 + end) + spec_.latency;
        // The duration along the critical path: the read phase (to the writes' issue) is bound by
        // the read that completed last, or by the compute when it took longer; then the write
        // that completed last; then the latency.
        const std::uint64_t read_phase = ctx_.clock.cycle_at_or_after(t0 + writes_at) - rec.start;
        const std::uint64_t write_phase = rec.end - spec_.latency - rec.start - read_phase;
        // A send's read phase lasts until its message has left: past its reads (and compute), the
        // link's wire.
        const std::uint64_t own_reads = std::min(
            read_phase, ctx_.clock.cycle_at_or_after(t0 + std::max(reads, compute_time)) - rec.start);
        rec.time[TimePart::Wire] += read_phase - own_reads;
        attribute(rec.time, own_reads, reads >= compute_time ? read_critical : PhaseCritical{});
        attribute(rec.time, write_phase, write_critical);
        rec.time[TimePart::Latency] += spec_.latency;
        sc_core::wait(ctx_.clock.time_of(rec.end) - t0);
        busy_cycles_ += rec.end - rec.start;
        if (ctx_.keep_records) {
            ctx_.records.push_back(std::move(rec));
        } else { // host memory stays flat over a long run: only each kind's totals grow
            auto& t = ctx_.kind_totals[static_cast<std::size_t>(kind_)];
            t.unit = kind_;
            ++t.index;
            t.end = std::max(t.end, rec.end);
            t.compute_cycles += rec.compute_cycles;
            t.bytes_read += rec.bytes_read;
            t.bytes_written += rec.bytes_written;
            t.time += rec.time;
        }
        ctx_.done[index] = true;
        busy_ = false;
        ctx_.command_done.notify(sc_core::SC_ZERO_TIME);
    }
}

} // namespace cardsim::sim
