#include "traces/from_run.hpp"

#include "traces/config_keys.hpp"

namespace cardsim::traces {

Trace trace_of(const sim::RunResult& run, const program::Program& program, const card::CardConfig& config,
               sim::Mode mode, std::optional<std::size_t> prefill_steps) {
    Trace t;
    t.header.program = program::digest(program);
    t.header.config = program.config_digest;
    t.header.knob = config.numerics;
    t.header.mode = mode == sim::Mode::Full ? Mode::Full : Mode::TimingOnly;
    t.header.clock_mhz = config.clock.kernel_mhz;
    t.header.ddr_channels = config.ddr.channels;
    t.header.meta = {{"producer", "cardsim"}, {"card", config.name}};
    record_config(t.header, config);
    if (prefill_steps) t.header.meta[std::string(prefill_steps_meta)] = std::to_string(*prefill_steps);
    const std::uint64_t n = program.commands.size();
    for (auto& r : run.records) {
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
                ops.push_back(WrittenOperand{{reinterpret_cast<const std::uint8_t*>(w.data()), w.size()},
                                             Encoding::F32});
            set_written(rec, ops, true);
        } else {
            rec.written = r.bytes_written;
            if (mode == sim::Mode::Full) rec.digest = r.digest;
        }
        t.records.push_back(std::move(rec));
    }
    return t;
}

} // namespace cardsim::traces
