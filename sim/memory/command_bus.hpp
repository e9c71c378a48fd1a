#pragma once
// The channel's command bus as a resource: one command (ACTIVATE, PRECHARGE, READ, WRITE,
// REFRESH) per memory clock.

#include "sim/memory/memory_clock.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace cardsim::sim::memory {

/// The cycles that already carry a command, over a sliding window of the last 256 cycles (a
/// bitmap ring). Commands are placed close to the newest one: one placed earlier than the window
/// (an ACTIVATE issued far ahead of a long backlog) is not checked, and counts as free. No
/// allocation.
class CommandBus {
public:
    static constexpr Cycle span = 256;

    void reset(Cycle origin) {
        words_.fill(0);
        runs_ = {};
        runs_hi_ = 0;
        next_run_ = 0;
        base_ = origin & ~Cycle{63};
        row_latest_ = 0;
        any_row_ = false;
    }
    /// free_at_or_after for a column command (READ/WRITE). Column commands are placed in
    /// increasing order, so one can only meet a row command (ACTIVATE, PRECHARGE, REFRESH): past
    /// the latest of those every cycle is free for it.
    Cycle free_for_column(Cycle t) const { return any_row_ && t <= row_latest_ ? free_at_or_after(t) : t; }
    /// Marks cycle `t` as carrying a row command.
    void take_row(Cycle t) {
        take(t);
        row_latest_ = any_row_ ? std::max(row_latest_, t) : t;
        any_row_ = true;
    }
    /// The first cycle at or after `t` that carries no command.
    Cycle free_at_or_after(Cycle t) const {
        if (t > runs_hi_) { // no run reaches `t`: the bitmap alone, a word at a time
            while (t >= base_ && t < base_ + span) {
                const std::uint64_t free = ~words_[(t >> 6) & 3] >> (t & 63);
                if (free != 0) return t + static_cast<Cycle>(std::countr_zero(free));
                t = (t | 63) + 1;
            }
            return t;
        }
        while (t >= base_ && t < base_ + span && (taken_bit(t) || in_runs(t)))
            ++t;
        return t;
    }
    /// Marks cycle `t` as carrying a command.
    void take(Cycle t) {
        if (t < base_) return;
        if (t >= base_ + span) slide(t);
        words_[(t >> 6) & 3] |= std::uint64_t{1} << (t & 63);
    }
    /// Marks the column commands of a run advanced in closed form: for each of the `count` cycles
    /// `firsts`, that cycle and every `step` after it up to `steps - 1` steps later. Kept as the
    /// arithmetic series (the last two runs; an older one's part inside the window is written
    /// into the bitmap), so a long run costs nothing per burst.
    void take_run(const std::array<Cycle, 8>& firsts, std::uint32_t count, Cycle step, std::uint64_t steps) {
        Run& old = runs_[next_run_];
        for (std::uint32_t i = 0; i < old.count; ++i) // the evicted run: what the window still sees
            for (Cycle t = std::max(old.firsts[i], first_in_window(old.firsts[i], old.step));
                 t <= old.last(i); t += old.step)
                words_[(t >> 6) & 3] |= std::uint64_t{1} << (t & 63);
        old = Run{firsts, count, step, steps};
        next_run_ ^= 1;
        old.lo = ~Cycle{0};
        old.hi = 0;
        for (std::uint32_t i = 0; i < count; ++i) {
            old.lo = std::min(old.lo, firsts[i]);
            old.hi = std::max(old.hi, old.last(i));
        }
        runs_hi_ = std::max(runs_[0].hi, runs_[1].hi);
        if (count > 0 && old.hi >= base_ + span) slide(old.hi);
    }

private:
    /// Moves the window so that it ends with the word holding `t`, clearing the words it leaves.
    void slide(Cycle t) {
        const Cycle base = ((t >> 6) << 6) + 64 - span;
        if (base - base_ >= span)
            words_.fill(0);
        else
            for (Cycle w = base_; w < base; w += 64)
                words_[(w >> 6) & 3] = 0;
        base_ = base;
    }

    /// The column commands of a run advanced in closed form, as arithmetic series.
    struct Run {
        std::array<Cycle, 8> firsts{};
        std::uint32_t count = 0;
        Cycle step = 1;
        std::uint64_t steps = 0;
        Cycle lo = 1, hi = 0; ///< the cycles the run spans (none when lo > hi)
        Cycle last(std::uint32_t i) const { return firsts[i] + (steps - 1) * step; }
    };
    bool taken_bit(Cycle t) const { return words_[(t >> 6) & 3] >> (t & 63) & 1; }
    bool in_runs(Cycle t) const {
        for (const Run& r : runs_)
            if (t >= r.lo && t <= r.hi)
                for (std::uint32_t i = 0; i < r.count; ++i)
                    if (t >= r.firsts[i] && t <= r.last(i) && (t - r.firsts[i]) % r.step == 0) return true;
        return false;
    }
    /// The first cycle of a series from `first` by `step` that is not before the window.
    Cycle first_in_window(Cycle first, Cycle step) const {
        return first >= base_ ? first : first + (base_ - first + step - 1) / step * step;
    }

    std::array<std::uint64_t, span / 64> words_{};
    std::array<Run, 2> runs_{};
    Cycle runs_hi_ = 0; ///< no run holds a cycle past this
    std::uint32_t next_run_ = 0;
    Cycle base_ = 0;
    Cycle row_latest_ = 0; ///< the latest row command taken
    bool any_row_ = false;
};

} // namespace cardsim::sim::memory
