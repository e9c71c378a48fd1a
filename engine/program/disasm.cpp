#include "engine/program/program.hpp"

#include <fmt/core.h>

namespace cardsim::program {

std::string disassemble(const Program& p, std::size_t index) {
    auto& c = p.commands.at(index);
    auto& s = spec(c.opcode);
    std::string line = fmt::format("{:>6}  {:<14} {:<13}", index, card::name(c.unit), s.name);
    if (c.flags) line += fmt::format(" flags={:#x}", c.flags);
    if (!c.deps.empty()) {
        line += " deps=";
        for (std::size_t i = 0; i < c.deps.size(); ++i)
            line += fmt::format("{}{}", i ? "," : "", c.deps[i]);
    }
    for (std::size_t i = 0; i < c.operands.size(); ++i) {
        auto& o = c.operands[i];
        auto n = i < s.operands.size() ? s.operands[i].name : std::string_view("?");
        if (o.region == Region::None) {
            line += fmt::format(" {}=-", n);
            continue;
        }
        line += fmt::format(" {}={}+{:#x}[{}]{}", n, name(o.region), o.offset, o.bytes, name(o.access));
    }
    for (std::size_t i = 0; i < c.dims.size(); ++i)
        line += fmt::format(" {}={}", i < s.dims.size() ? s.dims[i] : std::string_view("?"), c.dims[i]);
    for (std::size_t i = 0; i < c.params.size(); ++i) {
        if (i < s.params.size() && s.params[i].kind == ParamKind::F64)
            line += fmt::format(" {}={}", s.params[i].name, bits_f64(c.params[i]));
        else
            line += fmt::format(" {}={}", i < s.params.size() ? s.params[i].name : std::string_view("?"),
                                c.params[i]);
    }
    return line;
}

std::string describe_header(const Program& p) {
    std::string out = fmt::format("cardsim program, format version {}\n", version);
    out += fmt::format("config digest {:016x}\nimage digest  {:016x}\nprogram digest {:016x}\n",
                       p.config_digest, p.image_digest, digest(p));
    out += fmt::format("arena {} bytes\nregions:\n", p.arena_bytes);
    for (auto& r : p.regions)
        out += fmt::format("  {:<8} {:<4} base {:#014x} size {:#014x} ({} bytes)\n", name(r.kind),
                           name(r.space), r.base, r.size, r.size);
    out += fmt::format("commands: {}\n", p.commands.size());
    auto& h = p.host;
    out += fmt::format("host map:\n  model {}\n  checkpoint digest {:016x}\n",
                       h.model.empty() ? "-" : h.model, h.checkpoint_digest);
    out += fmt::format("  bucket tokens={} seqs={} markers={}, max positions {}, vocab {}\n", h.tokens,
                       h.seqs, h.markers, h.max_positions, h.vocab);
    if (h.tensor * h.stages > 1)
        out +=
            fmt::format("  card {} of {}: {} tensor ranks × {} pipeline stages{}\n", h.card,
                        h.tensor * h.stages, h.tensor, h.stages, h.experts ? ", experts split by index" : "");
    static constexpr std::string_view rows[] = {"tokens", "seqs", "markers"};
    for (auto& e : h.io) {
        out += fmt::format("  {:<13} io+{:#x}[{}]", name(e.role), e.offset, e.bytes);
        if (e.value != no_index)
            out += fmt::format(" value={} {}×{}", e.value, rows[static_cast<std::size_t>(e.rows)], e.width);
        if (e.after != no_index) out += fmt::format(" after op {}", e.after);
        if (e.layer != no_index) out += fmt::format(" layer {}", e.layer);
        out += "\n";
    }
    return out;
}

} // namespace cardsim::program
