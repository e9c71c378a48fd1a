#include "traces/csv.hpp"

#include "engine/io/atomic_file.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

namespace cardsim::traces {

std::string to_csv(const Trace& t) {
    std::uint32_t channels = t.header.ddr_channels.value_or(0);
    std::string out = "index,unit,opcode,start,end,duration,read,written,digest,pc";
    for (std::uint32_t c = 0; c < channels; ++c)
        out += fmt::format(",ddr{0}_read,ddr{0}_written", c);
    out += '\n';
    for (auto& r : t.records) {
        out += fmt::format("{},{},{},{},{},{},{},{},{},{}", r.index, r.unit, r.opcode, r.start, r.end,
                           r.duration(), r.read, r.written, r.digest ? hex16(*r.digest) : "",
                           r.pc ? std::to_string(*r.pc) : "");
        for (std::uint32_t c = 0; c < channels; ++c)
            out +=
                c < r.ddr.size() ? fmt::format(",{},{}", r.ddr[c].read, r.ddr[c].written) : std::string(",,");
        out += '\n';
    }
    return out;
}

void write_csv(const std::filesystem::path& destination, const Trace& trace) {
    io::write_file_atomically(destination, to_csv(trace));
}

} // namespace cardsim::traces
