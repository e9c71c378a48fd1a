#pragma once
// Traces built in code for the trace tests (no simulator yet), and their scratch directory.

#include "tests/support/scratch_dir.hpp"
#include "traces/trace.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace cardsim::traces::testing {

/// The little-endian bytes of f32 values, as they lie in memory.
inline std::vector<std::uint8_t> f32_bytes(std::initializer_list<float> values) {
    std::vector<std::uint8_t> out;
    for (float f : values) {
        auto bits = std::bit_cast<std::uint32_t>(f);
        for (int i = 0; i < 4; ++i)
            out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
    }
    return out;
}

/// `n` bytes of a simple pattern seeded by `seed`.
inline std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::uint8_t>((i * 31 + seed * 17 + (i >> 3)) & 0xff);
    return out;
}

/// A record of `unit`/`opcode` over [start, end) that read `read` bytes and wrote `operands`.
inline Record record(std::uint64_t index, std::string unit, std::string opcode, std::uint64_t start,
                     std::uint64_t end, std::uint64_t read, std::vector<WrittenOperand> operands,
                     bool carry_data) {
    Record r;
    r.index = index;
    r.unit = std::move(unit);
    r.opcode = std::move(opcode);
    r.start = start;
    r.end = end;
    r.read = read;
    set_written(r, operands, carry_data);
    return r;
}

/// The header of a timing-only system of two cards (each with a program digest of its own) joined
/// both ways over two ports, on 2-channel cards at 300 MHz.
inline Header two_card_header() {
    Header h;
    h.config = 0x0b8d2f6e1a3c5749;
    h.mode = Mode::TimingOnly;
    h.clock_mhz = 300;
    h.ddr_channels = 2;
    h.meta = {{"producer", "test"}};
    h.cards = {0x1111111111111111, 0x2222222222222222};
    h.program = system_digest(h.cards);
    h.links = {{0, 1, 2}, {1, 0, 2}};
    return h;
}

/// Command `index` (its pc too) of card `card`: `unit`/`opcode` over [start, end), 64 bytes read
/// from DDR channel 0 and 64 written.
inline Record card_record(std::uint32_t card, std::uint64_t index, std::string unit, std::string opcode,
                          std::uint64_t start, std::uint64_t end) {
    Record r{.index = index,
             .unit = std::move(unit),
             .opcode = std::move(opcode),
             .start = start,
             .end = end,
             .read = 64,
             .written = 64};
    r.pc = index;
    r.ddr = {{64, 0}, {0, 0}};
    r.card = card;
    return r;
}

/// A full-mode trace of eight commands over five units on a 4-channel card: data blocks in all
/// three encodings (one spanning several data lines, one command with two write operands), a
/// zero-length command, a command writing nothing, overlapping commands on one unit, a gap in the
/// indices, pc fields, ddr fields on every command, and meta values that need escaping.
inline Trace sample_trace() {
    static const auto f32_out =
        f32_bytes({1.0f, -1.0f, 0.0f,  0.5f,  3.14159265f, 1e-30f, -2.5f, 65504.0f, 7.0f,  8.0f,
                   9.0f, 10.0f, 11.0f, 12.0f, 13.0f,       14.0f,  15.0f, 16.0f,    17.0f, 18.0f});
    static const auto dma_out = pattern(4096, 1);
    static const auto f16_out = pattern(20, 2); // 10 halves
    static const auto hex_out = pattern(70, 3);
    static const auto att_out = f32_bytes({0.25f, 0.75f, -0.125f, 100.0f});
    static const auto arg_out = pattern(4, 4);
    Trace t;
    t.header.program = 0x5e1f0c3a9b2d4e67;
    t.header.config = 0x0b8d2f6e1a3c5749;
    t.header.knob.scaling = numerics::ActScaling::PerBlock;
    t.header.knob.cache = numerics::CacheFormat::Int8Hadamard;
    t.header.mode = Mode::Full;
    t.header.clock_mhz = 331.25;
    t.header.ddr_channels = 4;
    t.header.meta = {{"producer", "cardsim tests"}, {"note", "line one\nline two\\ caf\xc3\xa9 tab\there"}};

    auto& rs = t.records;
    rs.push_back(record(0, "dma", "load", 0, 120, 4096, {{dma_out, Encoding::Hex}}, false));
    rs.push_back(record(1, "matvec", "matvec_q4", 120, 5400, 1048704, {{f32_out, Encoding::F32}}, true));
    rs.back().pc = 1;
    rs.push_back(record(2, "norm", "rmsnorm", 5400, 5600, 80,
                        {{f16_out, Encoding::F16}, {{}, Encoding::Hex}, {hex_out, Encoding::Hex}}, true));
    rs.push_back(record(3, "attention", "attention", 5600, 9000, 65536, {{att_out, Encoding::F32}}, true));
    rs.push_back(record(4, "matvec", "matvec_q4", 5500, 7000, 1048704, {{f32_out, Encoding::F32}}, false));
    rs.back().pc = 1;
    rs.push_back(record(5, "argmax", "argmax", 9000, 9000, 80, {{arg_out, Encoding::Hex}}, true));
    rs.push_back(record(7, "add", "add", 9000, 9100, 160, {}, false));
    rs.push_back(record(8, "matvec", "matvec_q4", 6000, 9500, 1048704, {{f32_out, Encoding::F32}}, false));
    std::uint64_t k = 0;
    for (auto& r : rs) {
        r.ddr.resize(4);
        for (std::size_t c = 0; c < 4; ++c)
            r.ddr[c] = {r.read / 4 + c * k, c == (k % 4) ? r.written : 0};
        ++k;
    }
    return t;
}

/// `t` with a split on every record: waits that fit before its start (deps, unit, issue by its
/// index), and its duration as half DDR data, a quarter refresh, the rest latency.
inline Trace with_splits(Trace t) {
    for (auto& r : t.records) {
        TimeSplit s;
        s[TimePart::Deps] = std::min<std::uint64_t>(r.start, 7 * r.index);
        s[TimePart::Unit] = std::min<std::uint64_t>(r.start - s[TimePart::Deps], 3 * (r.index % 2));
        s[TimePart::Issue] = r.start - s[TimePart::Deps] - s[TimePart::Unit] > 0 ? 1 : 0;
        s[TimePart::DdrData] = r.duration() / 2;
        s[TimePart::DdrRefresh] = r.duration() / 4;
        s[TimePart::Latency] = r.duration() - s[TimePart::DdrData] - s[TimePart::DdrRefresh];
        r.split = s;
    }
    return t;
}

/// The traces tests write their files in a ScratchDir.
using cardsim::test::ScratchDir;

} // namespace cardsim::traces::testing
