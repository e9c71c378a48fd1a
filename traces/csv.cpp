#include "traces/csv.hpp"

#include "engine/io/atomic_file.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::traces {

std::string to_csv(const Trace& t) {
    std::uint32_t channels = t.header.ddr_channels.value_or(0);
    const bool system = !t.header.cards.empty(); // a system's rows lead with their card
    std::string out = system ? "card,index,unit,opcode,start,end,duration,read,written,digest,pc"
                             : "index,unit,opcode,start,end,duration,read,written,digest,pc";
    for (std::uint32_t c = 0; c < channels; ++c)
        out += fmt::format(",ddr{0}_read,ddr{0}_written", c);
    const bool split =
        std::any_of(t.records.begin(), t.records.end(), [](auto& r) { return r.split.has_value(); });
    if (split) {
        out += ",ready,bound_by";
        for (auto p : time_parts)
            out += fmt::format(",split.{}", name(p));
    }
    out += '\n';
    for (auto& r : t.records) {
        if (system) out += fmt::format("{},", r.card.value_or(0));
        out += fmt::format("{},{},{},{},{},{},{},{},{},{}", r.index, r.unit, r.opcode, r.start, r.end,
                           r.duration(), r.read, r.written, r.digest ? hex16(*r.digest) : "",
                           r.pc ? std::to_string(*r.pc) : "");
        for (std::uint32_t c = 0; c < channels; ++c)
            out +=
                c < r.ddr.size() ? fmt::format(",{},{}", r.ddr[c].read, r.ddr[c].written) : std::string(",,");
        if (split && r.split) {
            out += fmt::format(",{},{}", r.ready(), name(r.split->largest()));
            for (auto p : time_parts)
                out += fmt::format(",{}", (*r.split)[p]);
        } else if (split) {
            out += std::string(2 + time_part_count, ',');
        }
        out += '\n';
    }
    return out;
}

void write_csv(const std::filesystem::path& destination, const Trace& trace) {
    io::write_file_atomically(destination, to_csv(trace));
}

} // namespace cardsim::traces
