#include "sim/card/unit_module.hpp"

#include "sim/card/work.hpp"

#include <fmt/core.h>
#include <xxhash.h>

namespace cardsim::sim {

using program::Access;
using program::Region;

void CardContext::bus_error(std::uint32_t index, const std::string& what) {
    if (!fault)
        fault = fmt::format("bus error at step {}, command {} ({}): {}", step, index,
                            program::name(program.commands[index].opcode), what);
    sc_core::sc_stop();
}

UnitModule::UnitModule(const sc_core::sc_module_name& name, program::Unit kind, std::uint32_t instance,
                       const card::UnitSpec& spec, CardContext& context)
    : sc_core::sc_module(name), ddr("ddr"), sram("sram"), kind_(kind), instance_(instance), spec_(spec),
      ctx_(context) {
    SC_THREAD(run);
}

void UnitModule::start(std::uint32_t index) {
    busy_ = true;
    index_ = index;
    start_.notify(sc_core::SC_ZERO_TIME);
}

sc_core::sc_time UnitModule::transport(const program::Operand& o, tlm::tlm_command cmd,
                                       std::vector<std::byte>& bytes, sc_core::sc_time issue,
                                       std::uint32_t index) {
    auto& r = ctx_.region(o.region);
    std::uint64_t address = r.base + o.offset;
    if (o.offset % 4 != 0) {
        ctx_.bus_error(index,
                       fmt::format("misaligned access at {}+{:#x} (address {:#x}): operands are f32-aligned",
                                   program::name(o.region), o.offset, address));
        return issue;
    }
    payload_.set_command(cmd);
    payload_.set_address(address);
    payload_.set_data_length(static_cast<unsigned>(o.bytes));
    payload_.set_streaming_width(static_cast<unsigned>(o.bytes));
    payload_.set_data_ptr(ctx_.timing_only ? nullptr : reinterpret_cast<unsigned char*>(bytes.data()));
    payload_.set_byte_enable_ptr(nullptr);
    payload_.set_dmi_allowed(false);
    payload_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = issue;
    (r.space == program::Space::Ddr ? ddr : sram)->b_transport(payload_, delay);
    if (payload_.is_response_error())
        ctx_.bus_error(index,
                       fmt::format("{} at {}+{:#x} (address {:#x}, {} bytes) failed: {}",
                                   cmd == tlm::TLM_READ_COMMAND ? "read" : "write", program::name(o.region),
                                   o.offset, address, o.bytes, payload_.get_response_string()));
    return delay;
}

void UnitModule::run() {
    for (;;) {
        sc_core::wait(start_);
        const std::uint32_t index = index_;
        const auto& c = ctx_.program.commands[index];
        const auto t0 = sc_core::sc_time_stamp();
        CommandRecord rec;
        rec.step = ctx_.step;
        rec.index = index;
        rec.unit = kind_;
        rec.instance = instance_;
        rec.opcode = c.opcode;
        rec.start = ctx_.clock.cycle_at_or_after(t0);
        rec.channel_read.assign(ctx_.interleave.channels(), 0);
        rec.channel_written.assign(ctx_.interleave.channels(), 0);
        buffers_.resize(c.operands.size());
        auto count_channels = [&](const program::Operand& o, std::vector<std::uint64_t>& per) {
            if (ctx_.region(o.region).space != program::Space::Ddr) return;
            ctx_.interleave.for_each_piece(
                ctx_.region(o.region).base + o.offset, o.bytes,
                [&](std::uint32_t ch, std::uint64_t, std::uint64_t, std::uint64_t n) { per[ch] += n; });
        };
        // Reads, all issued now.
        sc_core::sc_time reads = sc_core::SC_ZERO_TIME;
        for (std::size_t i = 0; i < c.operands.size(); ++i) {
            auto& o = c.operands[i];
            auto& buf = buffers_[i];
            buf.assign(ctx_.timing_only || o.region == Region::None ? 0 : o.bytes, std::byte{0});
            if (o.region == Region::None || o.bytes == 0) continue;
            bool reads_it = o.access == Access::Read || (o.access == Access::ReadWrite);
            if (!reads_it) continue;
            reads = std::max(reads, transport(o, tlm::TLM_READ_COMMAND, buf, sc_core::SC_ZERO_TIME, index));
            rec.bytes_read += o.bytes;
            count_channels(o, rec.channel_read);
        }
        if (ctx_.fault) return;
        // Compute.
        if (!ctx_.timing_only && ctx_.execute) ctx_.execute(c, buffers_);
        rec.compute_cycles = compute_cycles(work(c, ctx_.positions), spec_.width);
        auto writes_at = std::max(reads, ctx_.clock.time_of(rec.compute_cycles));
        // Writes, issued when the reads and the compute are done.
        sc_core::sc_time end = writes_at;
        std::vector<std::byte> written;
        for (std::size_t i = 0; i < c.operands.size(); ++i) {
            auto& o = c.operands[i];
            if (o.region == Region::None || o.bytes == 0 || o.access == Access::Read) continue;
            end = std::max(end, transport(o, tlm::TLM_WRITE_COMMAND, buffers_[i], writes_at, index));
            rec.bytes_written += o.bytes;
            count_channels(o, rec.channel_written);
            if (!ctx_.timing_only) written.insert(written.end(), buffers_[i].begin(), buffers_[i].end());
        }
        if (ctx_.fault) return;
        rec.digest = ctx_.timing_only ? 0 : XXH64(written.data(), written.size(), 0);
        // Finish on the kernel edge after the last write, plus the pipeline latency.
        rec.end = ctx_.clock.cycle_at_or_after(t0 + end) + spec_.latency;
        sc_core::wait(ctx_.clock.time_of(rec.end) - t0);
        busy_cycles_ += rec.end - rec.start;
        ctx_.records.push_back(std::move(rec));
        ctx_.done[index] = true;
        busy_ = false;
        ctx_.command_done.notify(sc_core::SC_ZERO_TIME);
    }
}

} // namespace cardsim::sim
