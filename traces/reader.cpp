#include "traces/reader.hpp"

#include "engine/error.hpp"
#include "engine/io/device_check.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace cardsim::traces {
namespace {

/// What a u64 field must look like, for error messages.
constexpr std::string_view u64_shape = "a decimal number without sign or leading zero, at most 2^64 - 1";

/// The header keywords in the order the header must list them.
constexpr std::array<std::string_view, 9> header_keywords{
    "program", "config", "knob", "mode", "clock_mhz", "ddr_channels", "card", "link", "meta"};

/// True for the keywords of header lines.
bool is_header_keyword(std::string_view k) {
    for (auto h : header_keywords)
        if (h == k) return true;
    return false;
}

/// The first space-separated word of `text`.
std::string_view keyword(std::string_view text) {
    return text.substr(0, text.find(' '));
}

/// A byte as a person reads it in an error message.
std::string describe_byte(unsigned char c) {
    switch (c) {
    case '\r':
        return "a carriage return (0x0d)";
    case '\t':
        return "a tab (0x09)";
    default:
        return fmt::format("the byte 0x{:02x}", c);
    }
}

/// `text` for an error message: escaped and cut to a readable length.
std::string quote_for_error(std::string_view text) {
    constexpr std::size_t limit = 60;
    auto s = escape(text.substr(0, limit));
    if (text.size() > limit) s += "...";
    return "`" + s + "`";
}

} // namespace

Reader::Reader(std::unique_ptr<std::istream> in, std::string name)
    : in_(std::move(in)), name_(std::move(name)) {
    read_header();
}

Reader Reader::open(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(
            fmt::format("cannot read trace `{}`: it is a directory, expected a trace file", path.string()));
    io::refuse_device(path);
    auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
    if (!*in) throw Error(fmt::format("cannot read trace `{}`: {}", path.string(), std::strerror(errno)));
    return Reader(std::move(in), path.string());
}

Reader Reader::from_text(std::string text, std::string name) {
    return Reader(std::make_unique<std::istringstream>(std::move(text)), std::move(name));
}

void Reader::fail(std::uint64_t line, const std::string& what) const {
    throw Error(fmt::format("{}:{}: {}", name_, line, what));
}

/// Reads the next physical line; false at the end of the file. Checks its characters and its LF.
bool Reader::read_raw(Line& line) {
    if (!std::getline(*in_, line.text)) {
        if (in_->bad()) fail(line_number_ + 1, "reading failed");
        return false;
    }
    line.number = ++line_number_;
    if (in_->eof())
        fail(line.number, "the last line has no line feed, expected every line to end with one "
                          "(is the file truncated?)");
    for (std::size_t i = 0; i < line.text.size(); ++i) {
        auto c = static_cast<unsigned char>(line.text[i]);
        if (c < 0x20 || c > 0x7e)
            fail(line.number, fmt::format("column {} holds {}, expected printable ASCII (0x20-0x7e) only",
                                          i + 1, describe_byte(c)));
    }
    return true;
}

/// Reads the next line that is neither empty nor a comment (or takes the pushed-back one).
bool Reader::fetch(Line& line) {
    if (pending_) {
        line = std::move(*pending_);
        pending_.reset();
        return true;
    }
    while (read_raw(line))
        if (!line.text.empty() && line.text[0] != '#') return true;
    return false;
}

void Reader::tokenize(const Line& line) {
    tokens_.clear();
    std::string_view s = line.text;
    std::size_t at = 0;
    while (true) {
        auto space = s.find(' ', at);
        auto token = s.substr(at, space == std::string_view::npos ? std::string_view::npos : space - at);
        if (token.empty())
            fail(line.number, fmt::format("column {}: {}, expected fields separated by exactly one space",
                                          at + 1, at == s.size() ? "trailing space" : "an extra space"));
        tokens_.push_back(token);
        if (space == std::string_view::npos) break;
        at = space + 1;
    }
}

std::uint64_t Reader::number(const Line& line, std::size_t field, std::string_view what) {
    auto v = parse_u64(tokens_[field]);
    if (!v)
        fail(line.number,
             fmt::format("{} is {}, expected {}", what, quote_for_error(tokens_[field]), u64_shape));
    return *v;
}

void Reader::read_header() {
    Line line;
    if (!read_raw(line)) fail(1, "the file is empty, expected the first line `cardsim-trace N` (1, 2 or 3)");
    constexpr std::string_view magic = "cardsim-trace ";
    if (line.text.rfind(magic, 0) != 0)
        fail(line.number,
             fmt::format("found {}, expected the first line `cardsim-trace {}` (`cardsim-trace {}` for a "
                         "system of cards; is this a cardsim trace?)",
                         quote_for_error(line.text), one_card_format_version, format_version));
    auto version = std::string_view(line.text).substr(magic.size());
    auto v = parse_u64(version);
    if (!v)
        fail(line.number, fmt::format("the version is {}, expected the number {} ({} for a system of cards)",
                                      quote_for_error(version), one_card_format_version, format_version));
    if (*v < std::uint64_t(oldest_format_version) || *v > std::uint64_t(format_version))
        fail(line.number, fmt::format("trace format version {} is not supported, expected version {} to {} "
                                      "(the versions this cardsim reads)",
                                      version, oldest_format_version, format_version));
    version_ = static_cast<int>(*v);

    // The five required lines, in order.
    for (std::size_t k = 0; k < 5; ++k) {
        auto expected = header_keywords[k];
        if (!fetch(line))
            fail(line_number_, fmt::format("the file ends in its header, expected a `{}` line", expected));
        auto found = keyword(line.text);
        if (found != expected)
            fail(line.number,
                 fmt::format("found a `{}` line, expected the `{}` line (the header lists program, "
                             "config, knob, mode, clock_mhz, then ddr_channels and meta lines)",
                             escape(found), expected));
        tokenize(line);
        if (expected == "knob") {
            read_knob(line);
            continue;
        }
        if (tokens_.size() != 2)
            fail(line.number, fmt::format("the `{}` line has {} fields, expected `{}` and one value",
                                          expected, tokens_.size(), expected));
        auto value = tokens_[1];
        if (expected == "program" || expected == "config") {
            auto digest = parse_hex(value, 16);
            if (!digest)
                fail(line.number, fmt::format("the {} digest is {}, expected 16 lowercase hex digits",
                                              expected, quote_for_error(value)));
            (expected == "program" ? header_.program : header_.config) = *digest;
        } else if (expected == "mode") {
            if (value == "full")
                header_.mode = Mode::Full;
            else if (value == "timing-only")
                header_.mode = Mode::TimingOnly;
            else if (value == "hardware")
                header_.mode = Mode::Hardware;
            else
                fail(line.number, fmt::format("the mode is {}, expected full | timing-only | hardware",
                                              quote_for_error(value)));
        } else { // clock_mhz
            auto mhz = parse_clock(value);
            // From 1 kHz: a tinier clock made exported time stamps infinite (`"ts":Infinity` in
            // the Perfetto JSON); 2^64 cycles at 1 kHz are still a finite number of microseconds.
            if (!mhz || !(*mhz >= 0.001 && *mhz <= 1e12))
                fail(line.number,
                     fmt::format("the clock is {}, expected a decimal number of MHz in 0.001..1000000000000 "
                                 "(`300`, `331.25`)",
                                 quote_for_error(value)));
            header_.clock_mhz = *mhz;
        }
    }

    // The optional lines: ddr_channels, then meta lines.
    while (fetch(line)) {
        auto found = keyword(line.text);
        if (found == "ddr_channels") {
            if (header_.ddr_channels) fail(line.number, "a second `ddr_channels` line, expected one at most");
            if (!header_.meta.empty())
                fail(line.number, "the `ddr_channels` line follows meta lines, expected it before them");
            if (!header_.cards.empty())
                fail(line.number, "the `ddr_channels` line follows `card` lines, expected it before them");
            tokenize(line);
            if (tokens_.size() != 2)
                fail(line.number,
                     fmt::format("the `ddr_channels` line has {} fields, expected `ddr_channels N`",
                                 tokens_.size()));
            auto n = number(line, 1, "ddr_channels");
            if (n == 0 || n > max_ddr_channels)
                fail(line.number, fmt::format("ddr_channels is {}, expected 1 to {}", n, max_ddr_channels));
            header_.ddr_channels = static_cast<std::uint32_t>(n);
        } else if ((found == "card" || found == "link") && version_ >= 3) {
            if (!header_.meta.empty())
                fail(line.number,
                     fmt::format("the `{}` line follows meta lines, expected it before them", found));
            if (found == "card")
                read_card(line);
            else
                read_link(line);
        } else if (found == "meta") {
            read_meta(line);
        } else if (found == "card" || found == "link") {
            fail(line.number, fmt::format("a `{}` line in a version {} trace, expected it only in version 3 "
                                          "(a system of cards)",
                                          found, version_));
        } else if (is_header_keyword(found)) {
            fail(line.number, fmt::format("a second `{}` line, expected each header line once", found));
        } else {
            if (header_.cards.size() == 1)
                fail(line.number, "the header has one `card` line, expected none (one card) or 2 or more");
            if (!header_.cards.empty() && header_.program != system_digest(header_.cards))
                fail(line.number,
                     fmt::format("the program digest is {}, expected {}, the system's digest of its "
                                 "cards' programs (FORMAT.md section 5)",
                                 hex16(header_.program), hex16(system_digest(header_.cards))));
            pending_ = std::move(line);
            return;
        }
    }
    fail(line_number_,
         "the file ends after its header, expected cmd lines and the `end` line (is it truncated?)");
}

void Reader::read_card(const Line& line) {
    tokenize(line);
    if (tokens_.size() != 3)
        fail(line.number,
             fmt::format("the `card` line has {} fields, expected `card K PROGRAM`", tokens_.size()));
    if (!header_.links.empty())
        fail(line.number, "a `card` line follows `link` lines, expected every card line before them");
    auto k = number(line, 1, "the card");
    if (k != header_.cards.size())
        fail(line.number, fmt::format("the card is {}, expected card {} (card lines count 0, 1, 2, ...)", k,
                                      header_.cards.size()));
    if (k >= max_cards) fail(line.number, fmt::format("card {}: expected at most {} cards", k, max_cards));
    auto digest = parse_hex(tokens_[2], 16);
    if (!digest)
        fail(line.number, fmt::format("card {}'s program digest is {}, expected 16 lowercase hex digits", k,
                                      quote_for_error(tokens_[2])));
    header_.cards.push_back(*digest);
}

void Reader::read_link(const Line& line) {
    tokenize(line);
    if (tokens_.size() != 4)
        fail(line.number,
             fmt::format("the `link` line has {} fields, expected `link FROM TO PORTS`", tokens_.size()));
    LinkSpec l;
    const auto n = header_.cards.size();
    auto card = [&](std::size_t f, std::string_view what) {
        auto c = number(line, f, what);
        if (c > n) // node n is the system's switch (system.topology = "switch")
            fail(line.number,
                 fmt::format("{} is card {}, expected a card of the `card` lines above, 0 to {} (or {}, the "
                             "system's switch)",
                             what, c, n == 0 ? 0 : n - 1, n));
        return static_cast<std::uint32_t>(c);
    };
    l.from = card(1, "the link's sender");
    l.to = card(2, "the link's receiver");
    auto ports = number(line, 3, "the link's ports");
    if (ports == 0 || ports > 64)
        fail(line.number, fmt::format("the link has {} ports, expected 1 to 64", ports));
    l.ports = static_cast<std::uint32_t>(ports);
    if (l.from == l.to)
        fail(line.number,
             fmt::format("link {} -> {} joins a card to itself, expected two different cards", l.from, l.to));
    if (!header_.links.empty()) {
        auto& p = header_.links.back();
        if (std::pair(l.from, l.to) <= std::pair(p.from, p.to))
            fail(line.number, fmt::format("link {} -> {} follows link {} -> {}, expected links in increasing "
                                          "(from, to) order, each once",
                                          l.from, l.to, p.from, p.to));
    }
    header_.links.push_back(l);
}

void Reader::read_message(const Line& line) {
    tokenize(line);
    if (tokens_.size() != 6)
        fail(line.number, fmt::format("the `message` line has {} fields, expected `message FROM TO START END "
                                      "BYTES`",
                                      tokens_.size()));
    Message m;
    auto from = number(line, 1, "the message's sender"), to = number(line, 2, "the message's receiver");
    if (from >= max_cards || to >= max_cards)
        fail(line.number,
             fmt::format("the message is from card {} to card {}, expected cards of the header's "
                         "links",
                         from, to));
    m.from = static_cast<std::uint32_t>(from);
    m.to = static_cast<std::uint32_t>(to);
    m.start = number(line, 3, "the message's start cycle");
    m.end = number(line, 4, "the message's end cycle");
    m.bytes = number(line, 5, "the message's bytes");
    if (auto problem = check_message(header_, m, messages_.empty() ? nullptr : &messages_.back()))
        fail(line.number, *problem);
    messages_.push_back(m);
}

void Reader::read_knob(const Line& line) {
    constexpr std::string_view expected =
        "the five knobs scaling, activations, state, cache and attention as "
        "key=value, each once";
    if (tokens_.size() != 6)
        fail(line.number,
             fmt::format("the knob line has {} knobs, expected {}", tokens_.size() - 1, expected));
    std::array<std::string_view, 5> seen{};
    std::size_t n = 0;
    for (std::size_t i = 1; i < tokens_.size(); ++i) {
        auto pair = tokens_[i];
        auto eq = pair.find('=');
        if (eq == std::string_view::npos)
            fail(line.number, fmt::format("knob {} has no `=`, expected key=value", quote_for_error(pair)));
        auto key = pair.substr(0, eq), value = pair.substr(eq + 1);
        for (std::size_t j = 0; j < n; ++j)
            if (seen[j] == key)
                fail(line.number, fmt::format("knob `{}` appears twice, expected {}", escape(key), expected));
        seen[n++] = key;
        if (auto problem = numerics::set_knob(header_.knob, key, value)) fail(line.number, *problem);
    }
}

void Reader::read_meta(const Line& line) {
    auto rest = std::string_view(line.text).substr(std::string_view("meta").size());
    if (rest.empty() || rest[0] != ' ')
        fail(line.number, "the meta line has no key, expected `meta key=value`");
    rest.remove_prefix(1);
    auto eq = rest.find('=');
    if (eq == std::string_view::npos)
        fail(line.number,
             fmt::format("meta {} has no `=`, expected `meta key=value`", quote_for_error(rest)));
    auto key = rest.substr(0, eq);
    if (!is_name(key))
        fail(line.number, fmt::format("meta key {} is not a name, expected letters, digits, `_`, `.` or `-`",
                                      quote_for_error(key)));
    auto value = unescape(rest.substr(eq + 1));
    if (!value)
        fail(line.number,
             fmt::format("meta `{}` has a malformed escape, expected a backslash only as `\\xHH` "
                         "(two lowercase hex digits)",
                         key));
    if (!header_.meta.emplace(std::string(key), std::move(*value)).second)
        fail(line.number, fmt::format("meta key `{}` appears twice, expected each key once", key));
    if (key == source_meta && !source_of(header_)) // FORMAT.md: another value is rejected
        fail(line.number, fmt::format("meta source is `{}`, expected simulated, rtl or hardware",
                                      escape(header_.meta.at(std::string(source_meta)))));
}

std::optional<Record> Reader::next() {
    if (done_) return std::nullopt;
    Line line;
    if (!fetch(line))
        fail(line_number_,
             fmt::format("the file ends after {} commands without the `end` line, expected `end {}` "
                         "last (is it truncated?)",
                         count_, count_));
    auto found = keyword(line.text);
    while (found == "message" && version_ >= 3) { // a system's messages: after the commands, before end
        read_message(line);
        if (!fetch(line))
            fail(line_number_,
                 fmt::format("the file ends after {} commands and their messages without the `end` line, "
                             "expected `end {}` last (is it truncated?)",
                             count_, count_));
        found = keyword(line.text);
        if (found != "message" && found != "end")
            fail(line.number, fmt::format("a {} line after the messages, expected more `message` lines or "
                                          "the `end` line (messages follow every command)",
                                          quote_for_error(found)));
    }
    if (found == "end") {
        read_end(line);
        return std::nullopt;
    }
    if (found == "data")
        fail(line.number,
             "a data line that follows no cmd line, expected data lines right after their command");
    if (is_header_keyword(found))
        fail(line.number,
             fmt::format("a `{}` line among the commands, expected header lines before the first cmd "
                         "line",
                         found));
    if (found != "cmd")
        fail(line.number, fmt::format("unknown line kind {}, expected `cmd`, `data`{} or `end`",
                                      quote_for_error(found), version_ >= 3 ? ", `message`" : ""));

    auto cmd_line = line.number;
    Record record = read_cmd(line);
    while (fetch(line)) {
        if (keyword(line.text) != "data") {
            pending_ = std::move(line);
            break;
        }
        read_data(line, record);
    }
    if (auto problem = check_record(header_, record, previous_, previous_card_)) fail(cmd_line, *problem);
    previous_ = record.index;
    previous_card_ = record.card;
    ++count_;
    return record;
}

Record Reader::read_cmd(const Line& line) {
    tokenize(line);
    if (tokens_.size() < 9)
        fail(line.number,
             fmt::format("the cmd line has {} fields, expected `cmd index unit opcode start end read "
                         "written digest` and options",
                         tokens_.size()));
    Record r;
    r.index = number(line, 1, "the index");
    if (header_.cards.empty() && previous_ && r.index <= *previous_)
        fail(line.number,
             fmt::format("command index {} {} the previous index {}, expected strictly increasing "
                         "indices",
                         r.index, r.index == *previous_ ? "repeats" : "is below", *previous_));
    for (std::size_t f : {2, 3})
        if (!is_name(tokens_[f]))
            fail(line.number, fmt::format("the {} is {}, expected a name of letters, digits, `_`, `.` or `-`",
                                          f == 2 ? "unit" : "opcode", quote_for_error(tokens_[f])));
    r.unit = tokens_[2];
    r.opcode = tokens_[3];
    r.start = number(line, 4, "the start cycle");
    r.end = number(line, 5, "the end cycle");
    if (r.end < r.start)
        fail(line.number,
             fmt::format("command {} ends at cycle {} before its start {}, expected end >= start", r.index,
                         r.end, r.start));
    r.read = number(line, 6, "bytes read");
    r.written = number(line, 7, "bytes written");
    if (tokens_[8] != "-") {
        auto digest = parse_hex(tokens_[8], 16);
        if (!digest)
            fail(line.number, fmt::format("the digest is {}, expected 16 lowercase hex digits or `-`",
                                          quote_for_error(tokens_[8])));
        r.digest = *digest;
    }
    bool seen_pc = false, seen_ddr = false;
    seen_split_ = false;
    seen_card_ = false;
    for (std::size_t i = 9; i < tokens_.size(); ++i)
        read_option(line, tokens_[i], r, seen_pc, seen_ddr);
    return r;
}

void Reader::read_option(const Line& line, std::string_view token, Record& r, bool& seen_pc, bool& seen_ddr) {
    auto eq = token.find('=');
    auto key = token.substr(0, eq);
    auto value = eq == std::string_view::npos ? std::string_view{} : token.substr(eq + 1);
    const bool split = key == "split" && version_ >= 2;
    const bool card = key == "card" && version_ >= 3;
    if (eq == std::string_view::npos || (key != "pc" && key != "ddr" && !split && !card))
        fail(line.number,
             fmt::format("unknown option {}, expected `pc=N`, `ddr=R/W,...`{}", quote_for_error(token),
                         version_ >= 3   ? ", `split=PART:N,...` or `card=K`"
                         : version_ >= 2 ? " or `split=PART:N,...` (`card=` is version 3's)"
                                         : " (version 1 has no `split=`)"));
    bool& seen = key == "pc" ? seen_pc : key == "ddr" ? seen_ddr : key == "card" ? seen_card_ : seen_split_;
    if (seen) fail(line.number, fmt::format("option `{}` appears twice, expected it once at most", key));
    seen = true;
    if (card) {
        auto k = parse_u64(value);
        if (!k) fail(line.number, fmt::format("card is {}, expected {}", quote_for_error(value), u64_shape));
        if (header_.cards.empty())
            fail(line.number,
                 fmt::format("card={}, but the header has no `card` lines, expected card= only in "
                             "a system trace",
                             *k));
        if (*k >= header_.cards.size())
            fail(line.number,
                 fmt::format("card={} is not a card of the system, expected 0 to {} (its `card` lines)", *k,
                             header_.cards.size() - 1));
        r.card = static_cast<std::uint32_t>(*k);
        return;
    }
    if (key == "pc") {
        auto pc = parse_u64(value);
        if (!pc) fail(line.number, fmt::format("pc is {}, expected {}", quote_for_error(value), u64_shape));
        r.pc = *pc;
        return;
    }
    if (split) {
        read_split(line, value, r);
        return;
    }
    std::size_t at = 0;
    while (true) {
        auto comma = value.find(',', at);
        auto entry = value.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
        auto slash = entry.find('/');
        std::optional<std::uint64_t> rd, wr;
        if (slash != std::string_view::npos) {
            rd = parse_u64(entry.substr(0, slash));
            wr = parse_u64(entry.substr(slash + 1));
        }
        if (!rd || !wr)
            fail(line.number,
                 fmt::format("ddr entry {} of channel {} is malformed, expected READ/WRITE as two "
                             "decimal byte counts",
                             quote_for_error(entry), r.ddr.size()));
        r.ddr.push_back({*rd, *wr});
        if (comma == std::string_view::npos) break;
        at = comma + 1;
    }
    if (!header_.ddr_channels)
        fail(line.number,
             "a ddr field, but the header has no `ddr_channels` line, expected one before any ddr field");
    if (r.ddr.size() != *header_.ddr_channels)
        fail(line.number, fmt::format("the ddr field has {} entries, expected {} (ddr_channels)",
                                      r.ddr.size(), *header_.ddr_channels));
}

void Reader::read_split(const Line& line, std::string_view value, Record& r) {
    TimeSplit split;
    std::array<bool, time_part_count> seen{};
    std::size_t at = 0;
    while (at < value.size()) {
        auto comma = value.find(',', at);
        auto entry = value.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
        auto colon = entry.find(':');
        auto part = time_part(entry.substr(0, colon));
        auto cycles = colon == std::string_view::npos ? std::nullopt : parse_u64(entry.substr(colon + 1));
        if (!part || !cycles)
            fail(line.number,
                 fmt::format(
                     "split entry {} is malformed, expected PART:CYCLES with PART one of deps | unit | "
                     "issue | link | ddr.queueing | ddr.bank | ddr.refresh | ddr.turnaround | ddr.data | "
                     "sram | wire | compute | latency",
                     quote_for_error(entry)));
        auto k = static_cast<std::size_t>(*part);
        if (seen[k])
            fail(line.number,
                 fmt::format("split part `{}` appears twice, expected each part once at most", name(*part)));
        seen[k] = true;
        split[*part] = *cycles;
        if (comma == std::string_view::npos) break;
        at = comma + 1;
        if (at == value.size())
            fail(line.number, "the split ends with a comma, expected another PART:CYCLES");
    }
    r.split = split;
}

void Reader::read_data(const Line& line, Record& r) {
    tokenize(line);
    if (header_.mode == Mode::TimingOnly)
        fail(line.number,
             "a data line in a timing-only trace, expected none (timing-only runs compute no data)");
    if (tokens_.size() < 6)
        fail(line.number,
             fmt::format("the data line has {} fields, expected `data index operand encoding first` "
                         "and at least one value",
                         tokens_.size()));
    auto index = number(line, 1, "the data line's index");
    if (index != r.index)
        fail(line.number,
             fmt::format("a data line of command {} follows command {}, expected the index of the "
                         "command it follows",
                         index, r.index));
    auto operand = number(line, 2, "the operand");
    Encoding enc;
    auto e = tokens_[3];
    if (e == "hex")
        enc = Encoding::Hex;
    else if (e == "f16")
        enc = Encoding::F16;
    else if (e == "f32")
        enc = Encoding::F32;
    else
        fail(line.number, fmt::format("the encoding is {}, expected hex | f16 | f32", quote_for_error(e)));
    auto first = number(line, 4, "the first element offset");

    if (r.data.empty() || r.data.back().operand != operand) {
        if (!r.data.empty() && operand < r.data.back().operand)
            fail(line.number,
                 fmt::format("data of operand {} follows operand {}, expected operands in increasing "
                             "order, each operand's lines together",
                             operand, r.data.back().operand));
        r.data.push_back(DataBlock{operand, enc, {}});
    }
    auto& block = r.data.back();
    if (block.encoding != enc)
        fail(line.number, fmt::format("operand {} changes encoding from {} to {}, expected one encoding per "
                                      "operand",
                                      operand, name(block.encoding), name(enc)));
    auto so_far = block.bytes.size() / element_size(enc);
    if (first != so_far)
        fail(line.number,
             fmt::format("the first element offset is {}, expected {} (the elements of operand {} on "
                         "earlier lines)",
                         first, so_far, operand));

    std::size_t esize = element_size(enc);
    for (std::size_t t = 5; t < tokens_.size(); ++t) {
        auto token = tokens_[t];
        bool shape_ok = enc == Encoding::Hex ? token.size() % 2 == 0 : token.size() == 2 * esize;
        auto bad = [&] {
            fail(line.number,
                 fmt::format("value {} ({}) is {}, expected {}", t - 4, name(enc), quote_for_error(token),
                             enc == Encoding::Hex   ? "an even number of lowercase hex digits"
                             : enc == Encoding::F16 ? "4 lowercase hex digits"
                                                    : "8 lowercase hex digits"));
        };
        if (!shape_ok) bad();
        if (enc == Encoding::Hex) {
            for (std::size_t i = 0; i < token.size(); i += 2) {
                auto byte = parse_hex(token.substr(i, 2), 2);
                if (!byte) bad();
                block.bytes.push_back(static_cast<std::uint8_t>(*byte));
            }
        } else {
            auto v = parse_hex(token, 2 * esize);
            if (!v) bad();
            for (std::size_t i = 0; i < esize; ++i)
                block.bytes.push_back(static_cast<std::uint8_t>(*v >> (8 * i)));
        }
    }
}

void Reader::read_end(const Line& line) {
    tokenize(line);
    if (tokens_.size() != 2)
        fail(line.number, fmt::format("the end line has {} fields, expected `end N`", tokens_.size()));
    auto n = number(line, 1, "the end count");
    if (n != count_)
        fail(line.number,
             fmt::format("the end line counts {} commands, expected {} (the cmd lines above it)", n, count_));
    Line after;
    if (read_raw(after))
        fail(after.number, "a line after the end line, expected the end line to be the last");
    done_ = true;
}

namespace {

/// Every record of `reader`, then its messages.
Trace read_all(Reader& reader) {
    Trace t{reader.header(), {}, {}};
    while (auto r = reader.next())
        t.records.push_back(std::move(*r));
    t.messages = reader.messages();
    return t;
}

} // namespace

Trace read_trace(const std::filesystem::path& path) {
    auto reader = Reader::open(path);
    return read_all(reader);
}

Trace parse_trace(std::string text, std::string name) {
    auto reader = Reader::from_text(std::move(text), std::move(name));
    return read_all(reader);
}

} // namespace cardsim::traces
