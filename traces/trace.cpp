#include "traces/trace.hpp"

#include "engine/error.hpp"
#include "traces/lexical.hpp"
#include "traces/xxh64.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

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

std::uint32_t card_count(const Header& h) {
    return h.cards.empty() ? 1 : static_cast<std::uint32_t>(h.cards.size());
}

int version_of(const Header& h) {
    return h.cards.empty() ? one_card_format_version : format_version;
}

std::uint64_t system_digest(std::span<const std::uint64_t> card_programs) {
    Xxh64 h;
    for (auto d : card_programs) {
        std::uint8_t le[8];
        for (int i = 0; i < 8; ++i)
            le[i] = static_cast<std::uint8_t>(d >> (8 * i));
        h.update(le);
    }
    return h.digest();
}

Trace card_trace(const Trace& system, std::uint32_t k) {
    const auto n = card_count(system.header);
    if (k >= n)
        throw Error(
            fmt::format("card {}: the trace holds {} card{} (0..{})", k, n, n == 1 ? "" : "s", n - 1));
    Trace t;
    t.header = system.header;
    t.header.cards.clear();
    t.header.links.clear();
    if (!system.header.cards.empty()) t.header.program = system.header.cards[k];
    for (auto& r : system.records)
        if (r.card.value_or(0) == k) {
            t.records.push_back(r);
            t.records.back().card.reset();
        }
    return t;
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
    if (h.cards.size() == 1 || h.cards.size() > max_cards)
        return fmt::format("the system has {} card lines, expected none (one card) or 2 to {}",
                           h.cards.size(), max_cards);
    if (!h.cards.empty() && h.program != system_digest(h.cards))
        return fmt::format(
            "the program digest is {}, expected {}, the system's digest of its cards' programs",
            hex16(h.program), hex16(system_digest(h.cards)));
    if (!h.links.empty() && h.cards.empty())
        return "it lists links but no cards, expected links only in a system trace (card lines)";
    for (std::size_t i = 0; i < h.links.size(); ++i) {
        auto& l = h.links[i];
        if (l.from > h.cards.size() || l.to > h.cards.size() || l.from == l.to)
            return fmt::format("link {} -> {}: expected two different cards of the system's {} (or {}, its "
                               "switch)",
                               l.from, l.to, h.cards.size(), h.cards.size());
        if (l.ports == 0) return fmt::format("link {} -> {} has 0 ports, expected 1 or more", l.from, l.to);
        if (i > 0 && std::pair(l.from, l.to) <= std::pair(h.links[i - 1].from, h.links[i - 1].to))
            return fmt::format("link {} -> {} follows link {} -> {}, expected links in increasing (from, to) "
                               "order, each once",
                               l.from, l.to, h.links[i - 1].from, h.links[i - 1].to);
    }
    return std::nullopt;
}

std::optional<std::string> check_message(const Header& h, const Message& m, const Message* previous) {
    auto at = [&](std::string what) {
        return fmt::format("message {} -> {} at cycle {}: {}", m.from, m.to, m.start, what);
    };
    auto link = [&](const Message& x) {
        return std::find_if(h.links.begin(), h.links.end(),
                            [&](auto& l) { return l.from == x.from && l.to == x.to; }) -
               h.links.begin();
    };
    const auto mine = link(m);
    if (mine == static_cast<std::ptrdiff_t>(h.links.size()))
        return at("the header has no such link, expected a message over one of its `link` lines");
    if (m.end <= m.start)
        return at(fmt::format("it ends at cycle {}, expected its end after its start", m.end));
    if (!previous) return std::nullopt;
    const auto before = link(*previous);
    if (mine < before)
        return at(fmt::format("it follows a message of link {} -> {}, expected the messages in the order "
                              "of the header's links",
                              previous->from, previous->to));
    if (mine == before && m.start < previous->end)
        return at(fmt::format("it starts before the previous message on its link ends (cycle {}), "
                              "expected a link's messages in order, one at a time",
                              previous->end));
    return std::nullopt;
}

std::optional<std::string> check_record(const Header& h, const Record& r,
                                        std::optional<std::uint64_t> previous,
                                        std::optional<std::uint32_t> previous_card) {
    auto at = [&](std::string what) {
        return r.card ? fmt::format("card {} command {}: {}", *r.card, r.index, what)
                      : fmt::format("command {}: {}", r.index, what);
    };
    if (h.cards.empty() && r.card)
        return at("it names a card, but the trace is of one card (no `card` lines), expected no card=");
    if (!h.cards.empty()) {
        if (!r.card)
            return fmt::format("command {}: it names no card, expected card=K in a system trace of {} cards",
                               r.index, h.cards.size());
        if (*r.card >= h.cards.size())
            return at(fmt::format("its card is {}, expected a card of the system, 0 to {}", *r.card,
                                  h.cards.size() - 1));
        if (previous_card && *r.card < *previous_card)
            return at(fmt::format("it follows a command of card {}, expected the commands in card order",
                                  *previous_card));
        if (previous_card && *r.card != *previous_card) previous.reset(); // the card's first command
    }
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
        // Summed with a check: parts near 2^64 must not wrap into a sum that passes.
        std::uint64_t waited = 0, busy = 0;
        bool wraps = false;
        for (std::size_t i = 0; i < time_part_count; ++i)
            wraps |=
                __builtin_add_overflow(i < 4 ? waited : busy, r.split->cycles[i], i < 4 ? &waited : &busy);
        if (wraps) return at("its split's parts sum past 2^64 cycles, expected the command's own cycles");
        if (r.split->waited() > r.start)
            return at(fmt::format(
                "its split waits {} cycles (deps, unit, issue, link) before its start at cycle {}, "
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
