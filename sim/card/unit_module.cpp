#include "sim/card/unit_module.hpp"

#include "engine/kernels/formats.hpp"
#include "sim/card/work.hpp"

#include <fmt/core.h>

#include <algorithm>
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
      ctx_(context), busy_signal_("busy") {
    SC_THREAD(run);
}

void UnitModule::start(std::uint32_t index) {
    busy_ = true;
    index_ = index;
    start_.notify(sc_core::SC_ZERO_TIME);
}

std::vector<UnitModule::Span> UnitModule::traffic(const program::Command& c, std::size_t k) const {
    const auto& o = c.operands[k];
    bool cache_write = c.opcode == program::Opcode::CacheAppend && k == 2;
    bool cache_read = c.opcode == program::Opcode::Attend && (k == 2 || k == 3);
    if (!cache_write && !cache_read) return {Span{0, o.bytes}};
    const std::uint64_t rows = c.dims[0], kv_heads = cache_write ? c.dims[1] : c.dims[2];
    const std::uint64_t head_dim = cache_write ? c.dims[2] : c.dims[3], window = cache_read ? c.dims[5] : 0;
    const std::uint64_t row = kernels::cache_row_bytes(ctx_.config.numerics.cache, head_dim);
    const std::uint64_t max_positions = cache_write ? c.dims[3] : c.dims[4];
    const std::uint64_t stride = rows ? o.bytes / rows : 0;
    std::vector<Span> spans;
    // A sequence's cache holds each kv head's rows one after another (kernels::cache_append).
    for (std::uint64_t r = 0; r < rows; ++r) {
        std::uint64_t last = r < ctx_.positions.size() ? ctx_.positions[r] : 0;
        std::uint64_t first = cache_write ? last : (window && last + 1 > window ? last + 1 - window : 0);
        for (std::uint64_t h = 0; h < kv_heads; ++h) {
            std::uint64_t begin = r * stride + (h * max_positions + first) * row,
                          bytes = (last - first + 1) * row;
            if (begin + bytes <= o.bytes) spans.push_back(Span{begin, bytes});
        }
    }
    return spans;
}

sc_core::sc_time UnitModule::one(const program::Operand& o, tlm::tlm_command cmd, std::uint64_t address,
                                 std::uint64_t bytes, unsigned char* data, bool timed, sc_core::sc_time issue,
                                 std::uint32_t index) {
    auto& socket = ctx_.region(o.region).space == program::Space::Ddr ? ddr : sram;
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
                                       std::vector<std::byte>& bytes, const std::vector<Span>& spans,
                                       sc_core::sc_time issue, std::uint32_t index) {
    auto& r = ctx_.region(o.region);
    std::uint64_t address = r.base + o.offset;
    if (o.offset % 4 != 0) {
        ctx_.bus_error(index,
                       fmt::format("misaligned access at {}+{:#x} (address {:#x}): operands are f32-aligned",
                                   program::name(o.region), o.offset, address));
        return issue;
    }
    auto* data = ctx_.timing_only ? nullptr : reinterpret_cast<unsigned char*>(bytes.data());
    bool whole = spans.size() == 1 && spans[0].offset == 0 && spans[0].bytes == o.bytes;
    if (whole) return one(o, cmd, address, o.bytes, data, true, issue, index);
    // Data moves whole and untimed; the time is that of the spans the unit really moves.
    if (data && cmd == tlm::TLM_READ_COMMAND) one(o, cmd, address, o.bytes, data, false, issue, index);
    sc_core::sc_time done = issue;
    for (auto& s : spans)
        done = std::max(done, one(o, cmd, address + s.offset, s.bytes, nullptr, true, issue, index));
    if (data && cmd == tlm::TLM_WRITE_COMMAND) one(o, cmd, address, o.bytes, data, false, issue, index);
    return done;
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
        auto count_channels = [&](const program::Operand& o, const std::vector<Span>& spans,
                                  std::vector<std::uint64_t>& per) {
            if (ctx_.region(o.region).space != program::Space::Ddr) return;
            for (auto& s : spans)
                ctx_.interleave.for_each_piece(
                    ctx_.region(o.region).base + o.offset + s.offset, s.bytes,
                    [&](std::uint32_t ch, std::uint64_t, std::uint64_t, std::uint64_t n) { per[ch] += n; });
        };
        busy_signal_.write(true);
        std::vector<std::uint32_t> touched;
        for (auto& o : c.operands)
            if (o.region != Region::None && o.bytes && ctx_.region(o.region).space == program::Space::Ddr)
                ctx_.interleave.for_each_piece(
                    ctx_.region(o.region).base + o.offset, o.bytes,
                    [&](std::uint32_t ch, std::uint64_t, std::uint64_t, std::uint64_t) {
                        if (std::find(touched.begin(), touched.end(), ch) == touched.end())
                            touched.push_back(ch);
                    });
        auto activity = [&](int delta) {
            for (auto ch : touched) {
                ctx_.channel_active[ch] = std::uint32_t(int(ctx_.channel_active[ch]) + delta);
                if (ch < ctx_.channel_signals.size())
                    ctx_.channel_signals[ch]->write(ctx_.channel_active[ch]);
            }
        };
        activity(+1);
        // Reads, all issued now.
        sc_core::sc_time reads = sc_core::SC_ZERO_TIME;
        for (std::size_t i = 0; i < c.operands.size(); ++i) {
            auto& o = c.operands[i];
            auto& buf = buffers_[i];
            buf.assign(ctx_.timing_only || o.region == Region::None ? 0 : o.bytes, std::byte{0});
            if (o.region == Region::None || o.bytes == 0) continue;
            bool reads_it = o.access == Access::Read || (o.access == Access::ReadWrite);
            if (!reads_it) continue;
            auto spans = traffic(c, i);
            reads = std::max(reads,
                             transport(o, tlm::TLM_READ_COMMAND, buf, spans, sc_core::SC_ZERO_TIME, index));
            for (auto& sp : spans)
                rec.bytes_read += sp.bytes; // what moved (an attention reads its positions)
            count_channels(o, spans, rec.channel_read);
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
            auto spans = traffic(c, i);
            end = std::max(end, transport(o, tlm::TLM_WRITE_COMMAND, buffers_[i], spans, writes_at, index));
            rec.bytes_written += o.bytes;
            count_channels(o, spans, rec.channel_written);
            if (!ctx_.timing_only) written.insert(written.end(), buffers_[i].begin(), buffers_[i].end());
            if (ctx_.keep_data && !ctx_.timing_only) rec.written.push_back(buffers_[i]);
        }
        if (ctx_.fault) return;
        rec.digest = ctx_.timing_only ? 0 : XXH64(written.data(), written.size(), 0);
        // Finish on the kernel edge after the last write, plus the pipeline latency.
        rec.end = ctx_.clock.cycle_at_or_after(t0 + end) + spec_.latency;
        sc_core::wait(ctx_.clock.time_of(rec.end) - t0);
        busy_cycles_ += rec.end - rec.start;
        activity(-1);
        busy_signal_.write(false);
        ctx_.records.push_back(std::move(rec));
        ctx_.done[index] = true;
        busy_ = false;
        ctx_.command_done.notify(sc_core::SC_ZERO_TIME);
    }
}

} // namespace cardsim::sim
