#include "traces/trace.hpp"

#include "engine/error.hpp"
#include "traces/lexical.hpp"
#include "traces/xxh64.hpp"

#include <fmt/core.h>

#include <cmath>

namespace cardsim::traces {

std::string_view name(Mode m) {
    switch (m) {
    case Mode::Full:
        return "full";
    case Mode::TimingOnly:
        return "timing-only";
    case Mode::Hardware:
        return "hardware";
    }
    return "?";
}

std::string_view name(Source s) {
    switch (s) {
    case Source::Simulated:
        return "simulated";
    case Source::Rtl:
        return "rtl";
    case Source::Hardware:
        return "hardware";
    }
    return "?";
}

std::optional<Source> source_of(const Header& h) {
    auto it = h.meta.find(std::string(source_meta));
    if (it == h.meta.end()) return Source::Simulated;
    for (auto s : {Source::Simulated, Source::Rtl, Source::Hardware})
        if (it->second == name(s)) return s;
    return std::nullopt;
}

std::vector<Measured> measured_of(const Header& h) {
    std::vector<Measured> out;
    auto it = h.meta.find(std::string(measured_meta));
    if (it == h.meta.end()) return out;
    std::string_view v = it->second;
    while (!v.empty()) {
        const auto space = v.find(' ');
        const auto entry = v.substr(0, space);
        const auto a = entry.find(':'), b = a == std::string_view::npos ? a : entry.find(':', a + 1);
        std::optional<std::uint64_t> index, work, cycles;
        if (b != std::string_view::npos) {
            index = parse_u64(entry.substr(0, a));
            work = parse_u64(entry.substr(a + 1, b - a - 1));
            cycles = parse_u64(entry.substr(b + 1));
        }
        if (!index || !work || !cycles)
            throw Error(
                fmt::format("meta measured: entry `{}` is malformed, expected INDEX:WORK:CYCLES (three "
                            "decimal numbers)",
                            escape(entry)));
        out.push_back({*index, *work, *cycles});
        v = space == std::string_view::npos ? std::string_view{} : v.substr(space + 1);
    }
    return out;
}

void record_measured(Header& h, std::span<const Measured> m) {
    if (m.empty()) return;
    std::string v;
    for (const auto& x : m)
        v += fmt::format("{}{}:{}:{}", v.empty() ? "" : " ", x.index, x.work, x.cycles);
    h.meta[std::string(measured_meta)] = v;
}

std::string_view name(Encoding e) {
    switch (e) {
    case Encoding::Hex:
        return "hex";
    case Encoding::F16:
        return "f16";
    case Encoding::F32:
        return "f32";
    }
    return "?";
}

std::size_t element_size(Encoding e) {
    switch (e) {
    case Encoding::Hex:
        return 1;
    case Encoding::F16:
        return 2;
    case Encoding::F32:
        return 4;
    }
    return 1;
}

bool is_name(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '.' || c == '-';
        if (!ok) return false;
    }
    return true;
}

void set_written(Record& record, std::span<const WrittenOperand> operands, bool carry_data) {
    Xxh64 h;
    std::uint64_t total = 0;
    record.data.clear();
    for (std::size_t i = 0; i < operands.size(); ++i) {
        auto bytes = operands[i].bytes;
        h.update(bytes);
        total += bytes.size();
        if (carry_data && !bytes.empty())
            record.data.push_back(DataBlock{i, operands[i].encoding, {bytes.begin(), bytes.end()}});
    }
    record.written = total;
    record.digest = h.digest();
}

std::optional<std::string> check_header(const Header& h) {
    if (!std::isfinite(h.clock_mhz) || h.clock_mhz <= 0)
        return fmt::format("the clock is {} MHz, expected a positive finite number", h.clock_mhz);
    if (auto spelt = format_clock(h.clock_mhz); !spelt || parse_clock(*spelt) != h.clock_mhz)
        return fmt::format(
            "the clock of {} MHz has no exact decimal spelling of FORMAT.md, expected one below 2^64",
            h.clock_mhz);
    if (h.ddr_channels && (*h.ddr_channels == 0 || *h.ddr_channels > max_ddr_channels))
        return fmt::format("ddr_channels is {}, expected 1 to {}", *h.ddr_channels, max_ddr_channels);
    if (!source_of(h))
        return fmt::format("meta source is `{}`, expected simulated, rtl or hardware",
                           escape(h.meta.at(std::string(source_meta))));
    for (auto& [key, value] : h.meta)
        if (!is_name(key))
            return fmt::format("meta key `{}` is not a name, expected letters, digits, `_`, `.` or `-`",
                               escape(key));
    return std::nullopt;
}

std::optional<std::string> check_record(const Header& h, const Record& r,
                                        std::optional<std::uint64_t> previous) {
    auto at = [&](std::string what) { return fmt::format("command {}: {}", r.index, what); };
    if (previous && r.index <= *previous)
        return at(fmt::format("its index is not greater than the previous command's {}, expected strictly "
                              "increasing indices",
                              *previous));
    if (!is_name(r.unit))
        return at(fmt::format("unit `{}` is not a name, expected letters, digits, `_`, `.` or `-`",
                              escape(r.unit)));
    if (!is_name(r.opcode))
        return at(fmt::format("opcode `{}` is not a name, expected letters, digits, `_`, `.` or `-`",
                              escape(r.opcode)));
    if (r.end < r.start) return at(fmt::format("it ends at cycle {} before its start {}", r.end, r.start));
    if (h.mode == Mode::TimingOnly && r.digest)
        return at("it has a digest in a timing-only trace, expected `-`");
    if (h.mode != Mode::TimingOnly && !r.digest)
        return at(fmt::format("it has no digest, expected one in a {} trace", name(h.mode)));
    if (r.digest && r.written == 0 && *r.digest != empty_digest)
        return at(fmt::format("it writes no bytes but its digest is {}, expected {} (the digest of no bytes)",
                              hex16(*r.digest), hex16(empty_digest)));
    if (!r.ddr.empty()) {
        if (!h.ddr_channels) return at("it has a ddr field but the header has no ddr_channels line");
        if (r.ddr.size() != *h.ddr_channels)
            return at(fmt::format("its ddr field has {} entries, expected {} (ddr_channels)", r.ddr.size(),
                                  *h.ddr_channels));
    }
    if (r.split) {
        if (r.split->waited() > r.start)
            return at(
                fmt::format("its split waits {} cycles (deps, unit, issue, link) before its start at cycle {}, "
                            "expected at most the start",
                            r.split->waited(), r.start));
        if (r.split->busy() != r.duration())
            return at(
                fmt::format("its split's parts after the start sum to {} cycles, expected its duration {}",
                            r.split->busy(), r.duration()));
    }
    if (r.data.empty()) return std::nullopt;
    if (h.mode == Mode::TimingOnly) return at("it carries data in a timing-only trace, expected none");
    Xxh64 digest;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < r.data.size(); ++i) {
        auto& b = r.data[i];
        if (i > 0 && b.operand <= r.data[i - 1].operand)
            return at(
                fmt::format("its data block of operand {} follows operand {}, expected strictly increasing "
                            "operands",
                            b.operand, r.data[i - 1].operand));
        if (b.bytes.empty()) return at(fmt::format("its data block of operand {} is empty", b.operand));
        if (b.bytes.size() % element_size(b.encoding) != 0)
            return at(fmt::format("its data block of operand {} has {} bytes, expected whole {} elements",
                                  b.operand, b.bytes.size(), name(b.encoding)));
        digest.update(b.bytes);
        total += b.bytes.size();
    }
    if (total != r.written)
        return at(
            fmt::format("its data blocks hold {} bytes, expected {} (bytes written)", total, r.written));
    if (digest.digest() != *r.digest)
        return at(fmt::format("its data hashes to {}, expected its digest {}", hex16(digest.digest()),
                              hex16(*r.digest)));
    return std::nullopt;
}

} // namespace cardsim::traces
