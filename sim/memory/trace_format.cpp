#include "sim/memory/trace_format.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/io/device_check.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

namespace cardsim::sim::memory {
namespace {

constexpr std::size_t buffer_bytes = 1 << 20;
constexpr std::string_view cardsim_magic = "cardsim-ddr";

/// Splits a line into whitespace-separated tokens.
class Tokens {
public:
    explicit Tokens(std::string_view s) : s_(s) {}
    /// The next token, empty at the end.
    std::string_view next() {
        std::size_t i = 0;
        while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t'))
            ++i;
        std::size_t j = i;
        while (j < s_.size() && s_[j] != ' ' && s_[j] != '\t')
            ++j;
        std::string_view t = s_.substr(i, j - i);
        s_.remove_prefix(j);
        return t;
    }

private:
    std::string_view s_;
};

/// The value of hex digit `c`, or 16 when it is not one.
constexpr std::uint32_t digit_value(char c) {
    if (c >= '0' && c <= '9') return static_cast<std::uint32_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint32_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<std::uint32_t>(c - 'A' + 10);
    return 16;
}

/// The whole token as a number in `base` (10 or 16); false if it is empty, has another
/// character, or overflows 64 bits.
bool parse_unsigned(std::string_view t, std::uint64_t& v, std::uint32_t base) {
    if (t.empty()) return false;
    std::uint64_t r = 0;
    if (t.size() <= (base == 16 ? 16u : 19u)) { // cannot overflow: the common, fast case
        for (char c : t) {
            const std::uint32_t d = digit_value(c);
            if (d >= base) return false;
            r = r * base + d;
        }
    } else {
        for (char c : t) {
            const std::uint32_t d = digit_value(c);
            if (d >= base || __builtin_mul_overflow(r, std::uint64_t{base}, &r) ||
                __builtin_add_overflow(r, d, &r))
                return false;
        }
    }
    v = r;
    return true;
}

/// A hexadecimal number with or without 0x.
bool parse_hex(std::string_view t, std::uint64_t& v) {
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) t.remove_prefix(2);
    return parse_unsigned(t, v, 16);
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (x >= 'a' && x <= 'z' ? x - 32 : x) == (y >= 'a' && y <= 'z' ? y - 32 : y);
           });
}

std::string shown(std::string_view t) {
    return t.empty() ? std::string("the end of the line") : fmt::format("`{}`", t);
}

} // namespace

std::string_view name(TraceFormat format) {
    switch (format) {
    case TraceFormat::DramSim3:
        return "dramsim3";
    case TraceFormat::DramSys:
        return "dramsys";
    case TraceFormat::Cardsim:
        return "cardsim";
    }
    return "?";
}

std::optional<TraceFormat> parse_trace_format(std::string_view text) {
    for (auto f : {TraceFormat::DramSim3, TraceFormat::DramSys, TraceFormat::Cardsim})
        if (name(f) == text) return f;
    return std::nullopt;
}

TraceFormat detect_trace_format(const std::filesystem::path& path) {
    io::refuse_device(path);
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(fmt::format("cannot open trace `{}`: {}", path.string(), std::strerror(errno)));
    char line[4096];
    while (std::fgets(line, sizeof line, f.get())) {
        std::string_view s(line);
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
            s.remove_prefix(1);
        if (s.empty() || s.front() == '\n' || s.front() == '\r' || s.front() == '#') continue;
        if (s.substr(0, cardsim_magic.size()) == cardsim_magic) return TraceFormat::Cardsim;
        std::string_view first = Tokens(s).next();
        if (!first.empty() && first.back() == ':') return TraceFormat::DramSys;
        return TraceFormat::DramSim3;
    }
    return TraceFormat::Cardsim;
}

TraceReader::TraceReader(const std::filesystem::path& path, TraceFormat format, const TraceContext& context)
    : path_(path), format_(format), context_(context), memory_clock_(context.memory_mts),
      player_clock_(2 * context.player_mhz), file_(std::fopen(path.c_str(), "rb")), buffer_(buffer_bytes) {
    io::refuse_device(path);
    if (!file_) throw Error(fmt::format("cannot open trace `{}`: {}", path.string(), std::strerror(errno)));
}

void TraceReader::fail(std::string_view what) const {
    throw Error(fmt::format("{}:{}: {}", path_.string(), line_, what));
}

bool TraceReader::refill() {
    if (eof_) return false;
    if (begin_ > 0) {
        std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (end_ == buffer_.size()) {
        ++line_;
        fail(fmt::format("line longer than {} bytes", buffer_.size()));
    }
    const std::size_t n = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_.get());
    if (n == 0) {
        if (std::ferror(file_.get())) fail(fmt::format("read error: {}", std::strerror(errno)));
        eof_ = true;
        return false;
    }
    end_ += n;
    return true;
}

bool TraceReader::next_line(std::string_view& out) {
    for (;;) {
        const char* start = buffer_.data() + begin_;
        const void* nl = std::memchr(start, '\n', end_ - begin_);
        std::string_view line;
        if (nl) {
            const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - start);
            line = {start, len};
            begin_ += len + 1;
        } else if (refill()) {
            continue;
        } else if (begin_ < end_) { // the last line, without a newline
            line = {buffer_.data() + begin_, end_ - begin_};
            begin_ = end_;
        } else {
            return false;
        }
        ++line_;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        std::size_t i = 0;
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        if (i == line.size() || line[i] == '#') continue;
        out = line.substr(i);
        return true;
    }
}

bool TraceReader::next(MemRequest& out) {
    std::string_view line;
    if (!next_line(line)) {
        if (format_ == TraceFormat::Cardsim && !header_seen_)
            fail("expected the header `cardsim-ddr 1`, found the end of the file");
        return false;
    }
    switch (format_) {
    case TraceFormat::DramSim3:
        parse_dramsim3(line, out);
        break;
    case TraceFormat::DramSys:
        parse_dramsys(line, out);
        break;
    case TraceFormat::Cardsim:
        if (!header_seen_) {
            Tokens t(line);
            std::string_view magic = t.next();
            std::string_view version = t.next();
            if (magic != cardsim_magic)
                fail(fmt::format("expected the header `cardsim-ddr 1`, found {}", shown(magic)));
            if (version != "1")
                fail(fmt::format("cardsim-ddr trace version {}; this cardsim reads version 1",
                                 shown(version)));
            if (std::string_view extra = t.next(); !extra.empty())
                fail(fmt::format("unexpected {} after the header", shown(extra)));
            header_seen_ = true;
            return next(out);
        }
        parse_cardsim(line, out);
        break;
    }
    if (out.address > context_.address_limit || out.length > context_.address_limit - out.address)
        fail(fmt::format("request of {} bytes at 0x{:x} runs past the end of the {} bytes of DDR", out.length,
                         out.address, context_.address_limit));
    return true;
}

void TraceReader::parse_dramsim3(std::string_view line, MemRequest& out) {
    Tokens t(line);
    std::string_view addr = t.next();
    std::string_view op = t.next();
    std::string_view cycle = t.next();
    std::uint64_t a = 0;
    std::uint64_t c = 0;
    if (!parse_hex(addr, a))
        fail(fmt::format("expected a hexadecimal address (0xADDR READ|WRITE CYCLE), found {}", shown(addr)));
    if (op == "READ" || iequals(op, "READ") || iequals(op, "P_MEM_RD") || iequals(op, "P_FETCH"))
        out.direction = Direction::Read;
    else if (op == "WRITE" || iequals(op, "WRITE") || iequals(op, "P_MEM_WR") || iequals(op, "BOFF"))
        out.direction = Direction::Write;
    else
        fail(fmt::format("expected READ or WRITE after the address, found {}", shown(op)));
    if (!parse_unsigned(cycle, c, 10))
        fail(fmt::format("expected a decimal cycle after {}, found {}", op, shown(cycle)));
    if (std::string_view extra = t.next(); !extra.empty())
        fail(fmt::format("unexpected {} after the cycle", shown(extra)));
    out.address = a;
    out.length = context_.request_bytes;
    out.time_ps = time_of(memory_clock_, c, "cycle");
}

/// The latest time stamp a trace may carry: 2^62 ps (about 53 days), far past any replay, and
/// small enough that no arrival cycle or latency computed from it overflows 64 bits.
constexpr std::uint64_t max_time_ps = std::uint64_t{1} << 62;

std::uint64_t TraceReader::checked_ps(std::uint64_t ps, std::string_view what) const {
    if (ps > max_time_ps)
        fail(fmt::format("{} {} ps is past the latest time a trace may carry, 2^62 ps (about 53 days)", what,
                         ps));
    return ps;
}

std::uint64_t TraceReader::time_of(const MemoryClock& clock, std::uint64_t cycles,
                                   std::string_view what) const {
    if (cycles > clock.cycles_of_ps(max_time_ps))
        fail(fmt::format("{} {} is past the latest time a trace may carry, 2^62 ps (about 53 days)", what,
                         cycles));
    return clock.ps_of(cycles);
}

void TraceReader::parse_dramsys(std::string_view line, MemRequest& out) {
    Tokens t(line);
    std::string_view time = t.next();
    std::uint64_t c = 0;
    if (time.empty() || time.back() != ':' || !parse_unsigned(time.substr(0, time.size() - 1), c, 10))
        fail(fmt::format("expected a time `CYCLE:` (CYCLE: read|write 0xADDR), found {}", shown(time)));
    std::string_view op = t.next();
    std::uint64_t length = context_.request_bytes;
    if (!op.empty() && op.front() == '(') {
        if (op.back() != ')' || !parse_unsigned(op.substr(1, op.size() - 2), length, 10) || length == 0 ||
            length > 0xffffffffu)
            fail(fmt::format("expected a length `(BYTES)`, found {}", shown(op)));
        op = t.next();
    }
    if (iequals(op, "read"))
        out.direction = Direction::Read;
    else if (iequals(op, "write"))
        out.direction = Direction::Write;
    else
        fail(fmt::format("expected read or write after the time, found {}", shown(op)));
    std::string_view addr = t.next();
    std::uint64_t a = 0;
    if (!parse_hex(addr, a))
        fail(fmt::format("expected a hexadecimal address after {}, found {}", op, shown(addr)));
    if (std::string_view data = t.next(); !data.empty()) {
        const bool hex = data.size() > 2 && data[0] == '0' && (data[1] == 'x' || data[1] == 'X') &&
                         std::all_of(data.begin() + 2, data.end(),
                                     [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
        if (!hex || data.size() - 2 != 2 * length)
            fail(fmt::format("expected {} bytes of data as 0x followed by {} hex digits, found {}", length,
                             2 * length, shown(data.substr(0, 40))));
        if (std::string_view extra = t.next(); !extra.empty())
            fail(fmt::format("unexpected {} after the data", shown(extra)));
    }
    out.address = a;
    out.length = static_cast<std::uint32_t>(length);
    out.time_ps = time_of(player_clock_, c, "time");
}

void TraceReader::parse_cardsim(std::string_view line, MemRequest& out) {
    Tokens t(line);
    std::string_view op = t.next();
    if (op == "R")
        out.direction = Direction::Read;
    else if (op == "W")
        out.direction = Direction::Write;
    else
        fail(fmt::format("expected R or W (R|W ADDR [LEN] [+DELTA|@TIME]), found {}", shown(op)));
    std::string_view addr = t.next();
    std::uint64_t a = 0;
    if (!parse_hex(addr, a))
        fail(fmt::format("expected a hexadecimal address after {}, found {}", op, shown(addr)));
    std::uint64_t length = 64;
    std::uint64_t time = last_time_ps_;
    std::string_view f = t.next();
    if (!f.empty() && f.front() != '+' && f.front() != '@') {
        if (!parse_unsigned(f, length, 10) || length == 0 || length > 0xffffffffu)
            fail(fmt::format("expected a length in bytes (1..4294967295), found {}", shown(f)));
        f = t.next();
    }
    if (!f.empty()) {
        std::uint64_t v = 0;
        if ((f.front() != '+' && f.front() != '@') || !parse_unsigned(f.substr(1), v, 10))
            fail(fmt::format("expected a time +DELTA_PS or @TIME_PS, found {}", shown(f)));
        time = checked_ps(f.front() == '+' ? (v > max_time_ps ? max_time_ps + 1 : last_time_ps_ + v) : v,
                          f.front() == '+' ? "the time after this delta" : "time");
        if (std::string_view extra = t.next(); !extra.empty())
            fail(fmt::format("unexpected {} after the time", shown(extra)));
    }
    last_time_ps_ = time;
    out.address = a;
    out.length = static_cast<std::uint32_t>(length);
    out.time_ps = time;
}

TraceWriter::TraceWriter(const std::filesystem::path& path, TraceFormat format, const TraceContext& context)
    : path_(path), partial_(io::temporary_for(path)), format_(format), context_(context),
      memory_clock_(context.memory_mts), player_clock_(2 * context.player_mhz),
      file_(std::fopen(partial_.c_str(), "wbx")) {
    if (!file_)
        throw Error(fmt::format("cannot write trace `{}`: {}", partial_.string(), std::strerror(errno)));
    buffer_.reserve(buffer_bytes + 256);
    if (format_ == TraceFormat::Cardsim) buffer_ += "cardsim-ddr 1\n";
}

TraceWriter::~TraceWriter() {
    if (!closed_) {
        file_.reset();
        std::error_code ec;
        std::filesystem::remove(partial_, ec);
    }
}

void TraceWriter::flush() {
    if (buffer_.empty()) return;
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_.get()) != buffer_.size())
        throw Error(fmt::format("cannot write trace `{}`: {}", partial_.string(), std::strerror(errno)));
    flushed_ += buffer_.size();
    buffer_.clear();
}

void TraceWriter::write(const MemRequest& r) {
    auto out = std::back_inserter(buffer_);
    const bool read = r.direction == Direction::Read;
    switch (format_) {
    case TraceFormat::DramSim3: {
        const std::uint64_t c = memory_clock_.cycles_of_ps(r.time_ps);
        const std::uint32_t step = context_.request_bytes;
        const std::uint64_t lines = (std::uint64_t{r.length} + step - 1) / step;
        for (std::uint64_t i = 0; i < lines; ++i)
            fmt::format_to(out, "0x{:x} {} {}\n", r.address + i * step, read ? "READ" : "WRITE", c);
        break;
    }
    case TraceFormat::DramSys: {
        const std::uint64_t c = player_clock_.cycles_of_ps(r.time_ps);
        if (r.length == context_.request_bytes)
            fmt::format_to(out, "{}:\t{}\t0x{:x}\n", c, read ? "read" : "write", r.address);
        else
            fmt::format_to(out, "{}:\t({})\t{}\t0x{:x}\n", c, r.length, read ? "read" : "write", r.address);
        break;
    }
    case TraceFormat::Cardsim: {
        fmt::format_to(out, "{} {:x}", read ? 'R' : 'W', r.address);
        if (r.length != 64) fmt::format_to(out, " {}", r.length);
        if (r.time_ps >= last_time_ps_) {
            if (r.time_ps != last_time_ps_) fmt::format_to(out, " +{}", r.time_ps - last_time_ps_);
        } else {
            fmt::format_to(out, " @{}", r.time_ps);
        }
        buffer_ += '\n';
        last_time_ps_ = r.time_ps;
        break;
    }
    }
    if (buffer_.size() >= buffer_bytes) flush();
}

void TraceWriter::stage() {
    if (staged_) return;
    if (!file_) // a stage that failed closed it: nothing whole to publish
        throw Error(
            fmt::format("cannot write trace `{}`: its temporary was not written whole", path_.string()));
    flush();
    if (std::fflush(file_.get()) != 0)
        throw Error(fmt::format("cannot write trace `{}`: {}", partial_.string(), std::strerror(errno)));
    if (std::fclose(file_.release()) != 0)
        throw Error(fmt::format("cannot write trace `{}`: {}", partial_.string(), std::strerror(errno)));
    staged_ = true;
}

void TraceWriter::publish() {
    if (closed_) return;
    stage();
    std::error_code ec;
    std::filesystem::rename(partial_, path_, ec);
    if (ec)
        throw Error(
            fmt::format("cannot rename `{}` to `{}`: {}", partial_.string(), path_.string(), ec.message()));
    closed_ = true;
}

} // namespace cardsim::sim::memory
