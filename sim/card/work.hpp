#pragma once
// How much work a command is for its unit, in the measure of the unit's width, and so its
// compute cycles: the closed-form timing of every unit.

#include "engine/program/program.hpp"

#include <cstdint>
#include <span>

namespace cardsim::sim {

/// The work of `c` in its unit's measure (configs/d5005.toml documents each unit's width):
/// MACs for the matvec (rows · n · k); cache elements for attention (per row and query head, the
/// keys and values of every attended position: 2 · positions · head_dim); channels for the conv
/// (rows · channels); state elements for the delta step (rows · value heads · dk · dv); bytes for
/// a copy; elements for the rest (rows · width, per head for rotations and cache appends).
/// `positions` holds each token row's position (the io positions of the step); a row attends
/// `min(pos + 1, window)` positions.
std::uint64_t work(const program::Command& c, std::span<const std::uint32_t> positions);

/// The compute cycles of `work` on a unit `width` wide: ceil(work / width), at least 1.
std::uint64_t compute_cycles(std::uint64_t work, std::uint32_t width);

} // namespace cardsim::sim
