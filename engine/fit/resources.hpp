#pragma once
// What a card config costs in the device: DSP blocks, ALMs and M20K blocks per unit kind (from its
// width, count and the numerics knob point), the arena's M20K blocks and the shell's reserve, as
// the `[fit]` coefficients of the config say. A pure function of the config: the simulator never
// depends on it.

#include "engine/card/card_config.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace cardsim::fit {

/// Amounts of the three resources a design takes, in blocks (whole blocks: rounded up).
struct Resources {
    std::uint64_t dsps = 0, alms = 0, m20ks = 0;
    Resources& operator+=(const Resources& o) {
        dsps += o.dsps;
        alms += o.alms;
        m20ks += o.m20ks;
        return *this;
    }
    friend bool operator==(const Resources&, const Resources&) = default;
};

/// One row of the resource table: a unit kind (all its instances), the arena or the shell.
struct ResourceRow {
    std::string_view name;   ///< `matvec`, ..., `arena`, `shell`
    std::uint32_t count = 0; ///< instances (0 for the arena and shell rows)
    std::uint64_t lanes = 0; ///< lanes per instance (the width the knob point runs at)
    Resources resources;     ///< of all its instances
};

/// Every row that takes resources (present unit kinds, the arena, the shell) and the total.
struct ResourceTable {
    std::vector<ResourceRow> rows;
    Resources total;
    Resources device; ///< what the device has
};

/// What one instance of `kind` costs at the config's knob point: its lanes times the per-lane
/// coefficients plus the per-instance ones, and what the knobs add (wide products with
/// `per_block` scaling, the second activation word, int8 products of array attention, f16 state
/// conversions, int8 and Hadamard caches), each rounded up to whole blocks.
Resources unit_resources(const card::CardConfig& config, card::UnitKind kind);

/// The M20K blocks the arena (`sram.bytes`) takes: ceil(bytes · 8 / m20k_bits).
std::uint64_t arena_m20ks(const card::CardConfig& config);

/// The whole table for `config`.
ResourceTable resources(const card::CardConfig& config);

} // namespace cardsim::fit
