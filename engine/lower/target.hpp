#pragma once
// What lowering needs to know of the card it compiles for: the memory it places regions in, the
// capabilities the shim checks against, and how weights, caches and states are stored. Derived
// from a card config (`target_of` once the config and numerics land), never written by hand
// outside tests.

#include "engine/numerics/knob.hpp"
#include "engine/shim/capabilities.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::lower {

/// How the card stores what lowering places: the weight format's packer and the sizes of kept rows.
struct Storage {
    /// The bytes of a `[rows, cols]` row-major f32 matrix in the card's weight format.
    std::function<std::vector<std::byte>(std::span<const float> values, std::size_t rows, std::size_t cols)>
        pack;
    /// As `pack`, into `out` (`packed_bytes(rows, cols)` of them). Optional: a packer that has it
    /// is row-separable, its bytes for a matrix being `rows` equal strides each of which is the
    /// packing of its row alone, so lowering packs blocks of rows on several threads straight
    /// from the checkpoint without the whole matrix in f32. Without it, lowering calls `pack`.
    std::function<void(std::span<const float> values, std::size_t rows, std::size_t cols,
                       std::span<std::byte> out)>
        pack_into;
    /// The bytes `pack` returns for a `[rows, cols]` matrix (known before packing). All may be
    /// called from several threads at once.
    std::function<std::size_t(std::size_t rows, std::size_t cols)> packed_bytes;
    /// Bytes one cached head row of `head_dim` values takes in the cache's keep format.
    std::function<std::size_t(std::size_t head_dim)> cache_row_bytes;
    /// Bytes one Gated-DeltaNet state element takes (4 for f32, 2 for f16).
    std::size_t state_element_bytes = 4;
};

/// The card as lowering sees it.
struct Target {
    std::uint32_t channels = 0;         ///< DDR channels
    std::uint64_t interleave_bytes = 0; ///< channel interleave granule
    std::uint64_t line = 64;            ///< one DDR burst (`ddr.data_bits` / 8 x burst length): every
                                        ///< placement starts on one
    std::uint64_t ddr_bytes = 0;        ///< DDR capacity in all
    std::uint64_t channel_bytes = 0;    ///< DDR capacity of one channel
    std::string weight_format;          ///< how weights are stored, as a capacity refusal names it (`int8`)
    std::uint64_t sram_bytes = 0;       ///< on-chip SRAM for the arena
    shim::Capabilities caps;
    numerics::EngineNumerics numerics;
    std::uint64_t config_digest = 0; ///< the config's digest, for the program header
    /// The weight format as the pack cache names it (`int8/e8m0/g32`; empty: no pack cache), and
    /// the xxh64 of every config value the packed bytes depend on (the format, the row alignment).
    std::string pack_format;
    std::uint64_t pack_digest = 0;
    Storage storage;

    /// Regions and weight matrices start at multiples of this: one interleave granule on every
    /// channel, so a stream starts on channel 0 and spreads over all of them.
    std::uint64_t stripe() const { return interleave_bytes * channels; }
};

} // namespace cardsim::lower

namespace cardsim::card {
struct CardConfig;
}

namespace cardsim::lower {

/// The target of a card config: its memory sizes and interleave, its capabilities, its numerics
/// point and digest, weights packed by the numerics quantiser in the config's weight format, cache
/// rows and state elements in the knob point's keep formats.
Target target_of(const card::CardConfig& c);

} // namespace cardsim::lower
