#pragma once
// The channel's command bus as a resource: one command (ACTIVATE, PRECHARGE, READ, WRITE,
// REFRESH) per memory clock.

#include "sim/memory/memory_clock.hpp"

#include <array>
#include <cstdint>

namespace cardsim::sim::memory {

/// The cycles that already carry a command, over a sliding window of the last 1024 cycles (a
/// bitmap ring; commands are placed close to the newest one, so older cycles are never asked
/// about again and count as free). No allocation.
class CommandBus {
public:
    static constexpr Cycle span = 1024;

    void reset(Cycle origin) {
        words_.fill(0);
        base_ = origin & ~Cycle{63};
    }
    /// The first cycle at or after `t` that carries no command.
    Cycle free_at_or_after(Cycle t) const {
        while (t >= base_ && t < base_ + span && (words_[(t >> 6) & 15] >> (t & 63) & 1))
            ++t;
        return t;
    }
    /// Marks cycle `t` as carrying a command.
    void take(Cycle t) {
        if (t < base_) return;
        if (t >= base_ + span) slide(t);
        words_[(t >> 6) & 15] |= std::uint64_t{1} << (t & 63);
    }

private:
    /// Moves the window so that it ends with the word holding `t`, clearing the words it leaves.
    void slide(Cycle t) {
        const Cycle base = ((t >> 6) << 6) + 64 - span;
        if (base - base_ >= span)
            words_.fill(0);
        else
            for (Cycle w = base_; w < base; w += 64)
                words_[(w >> 6) & 15] = 0;
        base_ = base;
    }

    std::array<std::uint64_t, 16> words_{};
    Cycle base_ = 0;
};

} // namespace cardsim::sim::memory
