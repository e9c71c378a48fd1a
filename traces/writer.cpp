#include "traces/writer.hpp"

#include "engine/error.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::traces {
namespace {

/// The most bytes the writer puts on one data line.
constexpr std::size_t bytes_per_data_line = 64;

constexpr std::string_view hex_digits = "0123456789abcdef";

/// Appends `n` bytes from `p` as hex digits, as one run.
void append_hex_bytes(std::string& out, const std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        out += hex_digits[p[i] >> 4];
        out += hex_digits[p[i] & 0xf];
    }
}

/// Appends the little-endian element of `size` bytes at `p` as 2*size hex digits, most significant first.
void append_element(std::string& out, const std::uint8_t* p, std::size_t size) {
    for (std::size_t i = size; i-- > 0;) {
        out += hex_digits[p[i] >> 4];
        out += hex_digits[p[i] & 0xf];
    }
}

/// Appends the data lines of one block of command `index`.
void append_block(std::string& out, std::uint64_t index, const DataBlock& b) {
    std::size_t esize = element_size(b.encoding);
    for (std::size_t off = 0; off < b.bytes.size(); off += bytes_per_data_line) {
        std::size_t n = std::min(bytes_per_data_line, b.bytes.size() - off);
        out += fmt::format("data {} {} {} {}", index, b.operand, name(b.encoding), off / esize);
        if (b.encoding == Encoding::Hex) {
            out += ' ';
            append_hex_bytes(out, b.bytes.data() + off, n);
        } else {
            for (std::size_t e = 0; e < n; e += esize) {
                out += ' ';
                append_element(out, b.bytes.data() + off + e, esize);
            }
        }
        out += '\n';
    }
}

} // namespace

std::string format_header(const Header& h) {
    if (auto problem = check_header(h))
        throw Error("cannot write a trace: its header breaks a rule: " + *problem);
    std::string out = fmt::format("cardsim-trace {}\n", version_of(h));
    out += "program " + hex16(h.program) + "\n";
    out += "config " + hex16(h.config) + "\n";
    out += "knob " + numerics::to_string(h.knob) + "\n";
    out += fmt::format("mode {}\n", name(h.mode));
    out += "clock_mhz " + *format_clock(h.clock_mhz) + "\n";
    if (h.ddr_channels) out += fmt::format("ddr_channels {}\n", *h.ddr_channels);
    for (std::size_t k = 0; k < h.cards.size(); ++k)
        out += fmt::format("card {} {}\n", k, hex16(h.cards[k]));
    for (auto& l : h.links)
        out += fmt::format("link {} {} {}\n", l.from, l.to, l.ports);
    for (auto& [key, value] : h.meta)
        out += "meta " + key + "=" + escape(value) + "\n";
    out += h.cards.empty()
               ? "# cmd index unit opcode start end read written digest [pc=N] [ddr=R/W,...] "
                 "[split=PART:N,...]\n"
               : "# cmd index unit opcode start end read written digest card=K [pc=N] [ddr=R/W,...] "
                 "[split=PART:N,...]\n";
    return out;
}

std::string format_record(const Record& r) {
    std::string out = fmt::format("cmd {} {} {} {} {} {} {} {}", r.index, r.unit, r.opcode, r.start, r.end,
                                  r.read, r.written, r.digest ? hex16(*r.digest) : std::string("-"));
    if (r.card) out += fmt::format(" card={}", *r.card);
    if (r.pc) out += fmt::format(" pc={}", *r.pc);
    if (!r.ddr.empty()) {
        out += " ddr=";
        for (std::size_t c = 0; c < r.ddr.size(); ++c)
            out += fmt::format("{}{}/{}", c ? "," : "", r.ddr[c].read, r.ddr[c].written);
    }
    if (r.split) {
        out += " split=";
        bool first = true;
        for (auto p : time_parts)
            if ((*r.split)[p]) {
                out += fmt::format("{}{}:{}", first ? "" : ",", name(p), (*r.split)[p]);
                first = false;
            }
    }
    out += '\n';
    for (auto& b : r.data)
        append_block(out, r.index, b);
    return out;
}

std::string format_message(const Message& m) {
    return fmt::format("message {} {} {} {} {}\n", m.from, m.to, m.start, m.end, m.bytes);
}

std::string to_text(const Trace& t) {
    std::string out = format_header(t.header);
    std::optional<std::uint64_t> previous;
    std::optional<std::uint32_t> previous_card;
    for (auto& r : t.records) {
        if (auto problem = check_record(t.header, r, previous, previous_card))
            throw Error("cannot write a trace: " + *problem);
        out += format_record(r);
        previous = r.index;
        previous_card = r.card;
    }
    if (!t.messages.empty()) out += "# message from to start end bytes\n";
    for (std::size_t i = 0; i < t.messages.size(); ++i) {
        if (auto problem = check_message(t.header, t.messages[i], i ? &t.messages[i - 1] : nullptr))
            throw Error("cannot write a trace: " + *problem);
        out += format_message(t.messages[i]);
    }
    out += fmt::format("end {}\n", t.records.size());
    return out;
}

Writer::Writer(std::filesystem::path destination, Header header)
    : header_(std::move(header)), file_(std::move(destination)) {
    try {
        file_.write(format_header(header_));
    } catch (const Error& e) {
        throw Error(fmt::format("writing `{}`: {}", file_.destination().string(), e.what()));
    }
}

void Writer::add(const Record& r) {
    if (previous_message_)
        throw Error(fmt::format("writing `{}`: command {} after a message, expected every command before "
                                "the messages",
                                file_.destination().string(), r.index));
    if (auto problem = check_record(header_, r, previous_, previous_card_))
        throw Error(fmt::format("writing `{}`: {}", file_.destination().string(), *problem));
    file_.write(format_record(r));
    previous_ = r.index;
    previous_card_ = r.card;
    ++count_;
}

void Writer::add(const Message& m) {
    if (auto problem = check_message(header_, m, previous_message_ ? &*previous_message_ : nullptr))
        throw Error(fmt::format("writing `{}`: {}", file_.destination().string(), *problem));
    if (!previous_message_) file_.write("# message from to start end bytes\n");
    file_.write(format_message(m));
    previous_message_ = m;
}

void Writer::finish() {
    file_.write(fmt::format("end {}\n", count_));
    file_.commit();
}

io::AtomicFile Writer::stage() {
    file_.write(fmt::format("end {}\n", count_));
    file_.stage();
    return std::move(file_);
}

io::AtomicFile stage_trace(const std::filesystem::path& destination, const Trace& trace) {
    Writer w(destination, trace.header);
    for (auto& r : trace.records)
        w.add(r);
    for (auto& m : trace.messages)
        w.add(m);
    return w.stage();
}

void write_trace(const std::filesystem::path& destination, const Trace& trace) {
    stage_trace(destination, trace).publish();
}

} // namespace cardsim::traces
