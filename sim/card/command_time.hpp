#pragma once
// Where a card command's time went: waiting for its dependencies and its unit, then the causes of
// its own cycles (DDR stall categories, SRAM, compute, pipeline latency).

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cardsim::sim {

/// One cause of a command's time. The first four come before its start (the command processor
/// reached it, waited for its dependencies, for a free unit, spent the issue cycles; a receive
/// then waited for its message over the link); the others
/// split its duration along its critical path: the request (or the compute) that finished last in
/// its read phase (a send's: then its message leaving over the link), then the request that
/// finished last in its write phase, then the unit's pipeline latency.
enum class TimePart : std::uint8_t {
    Deps,          ///< `deps`: its dependencies had not completed
    Unit,          ///< `unit`: every unit of its kind was busy
    Issue,         ///< `issue`: the command processor's issue cycles
    Link,          ///< `link`: a receive's message was still on its way from the other card
    DdrQueueing,   ///< `ddr.queueing`: its DDR requests waited behind other traffic (not its own)
    DdrBank,       ///< `ddr.bank`: PRECHARGE and ACTIVATE for its DDR requests
    DdrRefresh,    ///< `ddr.refresh`: its DDR requests' rank was refreshing
    DdrTurnaround, ///< `ddr.turnaround`: read/write and rank-to-rank bus turnaround
    DdrData,       ///< `ddr.data`: CAS latency and its own bursts at the burst rate
    Sram,          ///< `sram`: its critical on-chip SRAM access
    Wire,          ///< `wire`: a send's message leaving over the link after its reads
    Compute,       ///< `compute`: the unit's compute, where it outlasted the reads
    Latency,       ///< `latency`: the unit's pipeline latency after its last write
};

/// How many parts there are.
inline constexpr std::size_t time_part_count = 13;

/// Every part, in the order traces write them.
inline constexpr std::array<TimePart, time_part_count> time_parts{
    TimePart::Deps,        TimePart::Unit,    TimePart::Issue,      TimePart::Link,
    TimePart::DdrQueueing, TimePart::DdrBank, TimePart::DdrRefresh, TimePart::DdrTurnaround,
    TimePart::DdrData,     TimePart::Sram,    TimePart::Wire,       TimePart::Compute,
    TimePart::Latency};

/// The spelling of a part (`deps`, `ddr.refresh`, ...), as traces write it.
constexpr std::string_view name(TimePart p) {
    constexpr std::array<std::string_view, time_part_count> names{
        "deps",           "unit",     "issue", "link", "ddr.queueing", "ddr.bank", "ddr.refresh",
        "ddr.turnaround", "ddr.data", "sram",  "wire", "compute",      "latency"};
    return names[static_cast<std::size_t>(p)];
}

/// The part spelt `s`, or nothing.
constexpr std::optional<TimePart> time_part(std::string_view s) {
    for (auto p : time_parts)
        if (name(p) == s) return p;
    return std::nullopt;
}

/// True for the parts before a command's start (deps, unit, issue, link).
constexpr bool before_start(TimePart p) {
    return p == TimePart::Deps || p == TimePart::Unit || p == TimePart::Issue || p == TimePart::Link;
}

/// A command's time from the cycle the command processor reached it (in-order issue: the cycle it
/// handed over the command before, or the end of the program fetch) to its end, in kernel cycles,
/// by part. Rule: the parts before the start sum to start - ready, the others to the duration
/// end - start, so all of them to end - ready.
struct TimeSplit {
    std::array<std::uint64_t, time_part_count> cycles{};

    std::uint64_t& operator[](TimePart p) { return cycles[static_cast<std::size_t>(p)]; }
    std::uint64_t operator[](TimePart p) const { return cycles[static_cast<std::size_t>(p)]; }
    /// deps + unit + issue + link: start - ready.
    constexpr std::uint64_t waited() const { return cycles[0] + cycles[1] + cycles[2] + cycles[3]; }
    /// The parts of the duration: end - start.
    constexpr std::uint64_t busy() const {
        std::uint64_t s = 0;
        for (std::size_t i = 4; i < time_part_count; ++i)
            s += cycles[i];
        return s;
    }
    /// Every part: end - ready.
    constexpr std::uint64_t total() const { return waited() + busy(); }
    /// The largest part (the first of equal ones): what bound the command.
    constexpr TimePart largest() const {
        std::size_t best = 0;
        for (std::size_t i = 1; i < time_part_count; ++i)
            if (cycles[i] > cycles[best]) best = i;
        return time_parts[best];
    }
    TimeSplit& operator+=(const TimeSplit& o) {
        for (std::size_t i = 0; i < time_part_count; ++i)
            cycles[i] += o.cycles[i];
        return *this;
    }
    friend bool operator==(const TimeSplit&, const TimeSplit&) = default;
};

/// Adds `total` cycles to `into`, distributed over `weights` in proportion (largest remainder,
/// ties to the lower index), so the shares sum to `total` exactly; with every weight 0 they all go
/// to `fallback`. `weights` and `into` have the same length.
inline void share(std::uint64_t total, std::span<const std::uint64_t> weights, std::span<std::uint64_t> into,
                  std::size_t fallback) {
    unsigned __int128 sum = 0;
    for (auto w : weights)
        sum += w;
    if (sum == 0) {
        into[fallback] += total;
        return;
    }
    std::uint64_t given = 0;
    std::array<std::uint64_t, time_part_count> rest{}; // remainders, weights.size() <= time_part_count
    for (std::size_t i = 0; i < weights.size(); ++i) {
        const unsigned __int128 x = static_cast<unsigned __int128>(total) * weights[i];
        const auto q = static_cast<std::uint64_t>(x / sum);
        rest[i] = static_cast<std::uint64_t>(x % sum);
        into[i] += q;
        given += q;
    }
    for (; given < total; ++given) { // at most weights.size() - 1 cycles left
        std::size_t best = 0;
        for (std::size_t i = 1; i < weights.size(); ++i)
            if (rest[i] > rest[best]) best = i;
        ++into[best];
        rest[best] = 0;
    }
}

} // namespace cardsim::sim
