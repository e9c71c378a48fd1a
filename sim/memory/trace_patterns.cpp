#include "sim/memory/trace_patterns.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

namespace cardsim::sim::memory {

std::string_view name(PatternKind kind) {
    switch (kind) {
    case PatternKind::Sequential:
        return "sequential";
    case PatternKind::Random:
        return "random";
    case PatternKind::Streams:
        return "streams";
    case PatternKind::Mix:
        return "mix";
    }
    return "?";
}

std::optional<PatternKind> parse_pattern(std::string_view text) {
    for (auto k : {PatternKind::Sequential, PatternKind::Random, PatternKind::Streams, PatternKind::Mix})
        if (name(k) == text) return k;
    return std::nullopt;
}

void validate(const PatternSpec& s) {
    if (s.size == 0) throw Error("--size: a request must have at least one byte");
    if (s.span < s.size)
        throw Error(fmt::format("--span {} is smaller than one request of {} bytes", s.span, s.size));
    if (s.reads + s.writes == 0) throw Error("--ratio: reads + writes must be at least 1 (e.g. 2:1)");
    if (s.kind == PatternKind::Streams) {
        if (s.streams == 0) throw Error("--streams: at least one stream");
        const std::uint64_t spacing = s.spacing ? s.spacing : s.span / s.streams;
        if (spacing < s.size)
            throw Error(fmt::format("--spacing {} leaves less than one request per stream", spacing));
    }
    if (s.kind == PatternKind::Mix && s.span / 2 < s.size)
        throw Error(fmt::format("--span {} leaves less than one request per half", s.span));
}

PatternGenerator::PatternGenerator(const PatternSpec& spec, const MemoryClock& clock)
    : spec_(spec), clock_(clock), state_(spec.seed) {
    validate(spec_);
    if (spec_.stride == 0) spec_.stride = spec_.size;
    if (spec_.spacing == 0) spec_.spacing = spec_.span / spec_.streams;
    const std::uint64_t region = spec_.kind == PatternKind::Streams ? spec_.spacing
                                 : spec_.kind == PatternKind::Mix   ? spec_.span / 2
                                                                    : spec_.span;
    slots_ = FixedDivisor(spec_.span / spec_.size);
    starts_ = FixedDivisor((region - spec_.size) / spec_.stride + 1);
    streams_ = FixedDivisor(spec_.streams);
}

std::uint64_t PatternGenerator::random() { // splitmix64
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool PatternGenerator::next(MemRequest& out) {
    if (i_ == spec_.count) return false;
    const auto& s = spec_;
    const bool read = phase_ < s.reads; // i_ % (reads + writes) < reads
    if (++phase_ == s.reads + s.writes) phase_ = 0;
    // The offset of a stream's k-th request inside its region: k x stride, wrapping to the start
    // once a request would run past the region's end.
    const auto wrapped = [&](std::uint64_t k) { return starts_.remainder(k) * s.stride; };
    std::uint64_t a = 0;
    switch (s.kind) {
    case PatternKind::Sequential:
        a = s.base + wrapped(i_);
        break;
    case PatternKind::Random:
        a = s.base + slots_.remainder(random()) * s.size;
        break;
    case PatternKind::Streams: {
        const std::uint64_t stream = streams_.remainder(i_);
        const std::uint64_t k = streams_.quotient(i_);
        a = s.base + stream * s.spacing + wrapped(k);
        break;
    }
    case PatternKind::Mix: {
        const std::uint64_t half = s.span / 2;
        const std::uint64_t k = read ? reads_done_ : writes_done_;
        a = s.base + (read ? 0 : half) + wrapped(k);
        break;
    }
    }
    if (read)
        ++reads_done_;
    else
        ++writes_done_;
    out = {a, s.size, read ? Direction::Read : Direction::Write, clock_.ps_of(i_ * s.gap_cycles)};
    ++i_;
    return true;
}

} // namespace cardsim::sim::memory
