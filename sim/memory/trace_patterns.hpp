#pragma once
// The standard memory access patterns, generated as request streams (`cardsim ddr gen`).

#include "sim/memory/mem_request.hpp"
#include "sim/memory/memory_clock.hpp"

#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cardsim::sim::memory {

/// A standard pattern.
enum class PatternKind {
    Sequential, ///< base, base + stride, ... wrapping inside the span
    Random,     ///< uniform over the span, aligned to the request size
    Streams,    ///< N sequential streams, bases `spacing` apart, taken in turn
    Mix,        ///< a read stream over the span's first half and a write stream over its second
};

std::string_view name(PatternKind kind);
std::optional<PatternKind> parse_pattern(std::string_view text);

/// The parameters of a pattern. Directions follow `reads:writes`: in every group of
/// reads + writes requests the first `reads` read and the rest write (for Mix the read and
/// write streams advance separately). Request i is issued at i x gap_cycles memory cycles.
struct PatternSpec {
    PatternKind kind = PatternKind::Sequential;
    std::uint64_t count = 1 << 20;   ///< requests
    std::uint32_t size = 64;         ///< bytes per request
    std::uint64_t base = 0;          ///< first byte of the pattern's region
    std::uint64_t span = 1ull << 30; ///< bytes of the region
    std::uint32_t streams = 4;       ///< Streams: how many
    std::uint64_t stride = 0;        ///< bytes between a stream's consecutive requests (0 = size)
    std::uint64_t spacing = 0;       ///< Streams: bytes between stream bases (0 = span / streams)
    std::uint32_t reads = 1;
    std::uint32_t writes = 0;
    std::uint64_t gap_cycles = 0;
    std::uint64_t seed = 1; ///< Random: the generator's seed (splitmix64, the same on every host)
};

/// Checks a spec (sizes, spans and ratios that make sense); a cardsim::Error names the option.
void validate(const PatternSpec& spec);

/// Division by a divisor fixed at construction: a shift and a mask when it is a power of two
/// (the patterns' usual sizes), else the division.
class FixedDivisor {
public:
    explicit FixedDivisor(std::uint64_t divisor = 1)
        : d_(divisor), shift_(static_cast<std::uint32_t>(std::countr_zero(divisor))),
          pow2_(std::has_single_bit(divisor)) {}
    /// x / divisor.
    std::uint64_t quotient(std::uint64_t x) const { return pow2_ ? x >> shift_ : x / d_; }
    /// x % divisor.
    std::uint64_t remainder(std::uint64_t x) const { return pow2_ ? x & (d_ - 1) : x % d_; }

private:
    std::uint64_t d_;
    std::uint32_t shift_;
    bool pow2_;
};

/// Generates a pattern's requests on demand (nothing is stored).
class PatternGenerator final : public RequestSource {
public:
    PatternGenerator(const PatternSpec& spec, const MemoryClock& clock);
    bool next(MemRequest& out) override;

private:
    std::uint64_t random();
    PatternSpec spec_;
    MemoryClock clock_;
    std::uint64_t i_ = 0;
    std::uint64_t reads_done_ = 0;
    std::uint64_t writes_done_ = 0;
    std::uint64_t state_;
    std::uint32_t phase_ = 0; ///< i_ modulo reads + writes
    FixedDivisor slots_;      ///< Random: requests in the span
    FixedDivisor starts_;     ///< a stream's request starts in its region (see `wrapped`)
    FixedDivisor streams_;    ///< Streams: how many
};

} // namespace cardsim::sim::memory
