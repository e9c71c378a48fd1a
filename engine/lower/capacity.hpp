#pragma once
// The card's DDR budget of a lowered program: what each region takes (the weights in their card
// format, the caches and states for the run's positions and sequences, the io and the program)
// against the capacity of the card's channels, and the sentence that refuses a program that does
// not fit.

#include <cstdint>
#include <string>

namespace cardsim::lower {

/// What a program takes of the card's DDR, region by region (each rounded up to the stripe the
/// next region starts on), and what the card holds.
struct Capacity {
    std::uint64_t weights = 0, caches = 0, state = 0, io = 0, program = 0;
    std::uint64_t ddr_bytes = 0;     ///< the card's DDR, all channels
    std::uint32_t channels = 0;      ///< DDR channels
    std::uint64_t channel_bytes = 0; ///< one channel's capacity
    std::string weight_format;       ///< how the weights are stored, e.g. `int8`
    std::uint64_t positions = 0;     ///< positions each sequence's caches hold
    std::uint64_t seqs = 0;          ///< sequences the caches and states are kept for

    /// Every region's bytes together.
    std::uint64_t total() const { return weights + caches + state + io + program; }
    /// Whether the program fits the card's DDR.
    bool fits() const { return total() <= ddr_bytes; }
    /// Why it does not fit, in one sentence with the numbers (`the weights need 33.1 GiB at int8;
    /// the card's 4 channels hold 32 GiB`, with what the caches and states add when they are what
    /// tips it over); empty when it fits.
    std::string refusal() const;
    /// The budget, one line per region and the total against the capacity (what `cardsim check` prints).
    std::string text() const;
};

/// `bytes` as GiB with one decimal (`33.1 GiB`), or as MiB / KiB below a GiB / MiB.
std::string gib(std::uint64_t bytes);

} // namespace cardsim::lower
