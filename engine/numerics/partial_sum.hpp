#pragma once
// A matvec output split over cards (tensor parallel, over input columns): each card's exact part
// of the contract's sum, as it crosses the links, and the one rounding that joins the parts.
//
// The contract (matvec.hpp) rounds the window sum of all of a row's terms once. A card holding
// some of the row's 32-column chunks writes, per output, a `PartialSum`: the exact sum of its
// terms, S x 2^base (S an i128, base at or below every term's exponent), and `top`, a place at or
// above every term's top bit. `join` of the cards' parts of one output:
// - when every part is exact and all of them lie within one window (max top - min base <= 64,
//   so no term of any card falls below the window of the whole row), the result is the exact sum
//   rounded once to f32: the one-card contract's bits, whatever the order of the parts;
// - a NaN part (a NaN weight scale or a NonFinite activation block on its card) makes it NaN;
// - otherwise (terms spanning more than the window, where the one-card contract drops the bits of
//   terms below its window) the parts' sums are joined as window sums of their own: each part is
//   two terms (its high and low 64 bits) of a window sum. Order-free, but it may differ from the
//   one-card bits: `exact_join` says which case a set of parts is in.
// A part is 24 bytes on the wire: S (16, little-endian two's complement), base (i32), top (i16),
// flags (u16).

#include "engine/numerics/exact_sum.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::numerics {

/// One card's exact part of one matvec output.
struct PartialSum {
    __int128 sum = 0;      ///< the part's terms, exactly, in units of 2^base
    std::int32_t base = 0; ///< at or below every term's exponent
    std::int16_t top = 0;  ///< at or above every term's top bit (a zero part: base)
    std::uint16_t flags = 0;
    /// The sum is exact and its terms lie in [base, top).
    static constexpr std::uint16_t Exact = 1;
    /// A NaN weight scale or a NonFinite activation block: the output is NaN.
    static constexpr std::uint16_t Nan = 2;
    friend bool operator==(const PartialSum&, const PartialSum&) = default;
};

/// The exact part that `terms` make: their exact sum when it fits an i128 at the lowest term's place
/// (flag Exact, `top` the largest term's top bit), else their window sum at their own window,
/// not flagged Exact. No nonzero term: the exact zero part.
PartialSum partial_of(std::span<const Term> terms);

/// Bytes of a part on the wire and in the arena.
inline constexpr std::size_t PARTIAL_BYTES = 24;

/// Writes `p` as its 24 bytes.
void encode(const PartialSum& p, std::span<std::byte, PARTIAL_BYTES> out);
/// The part in 24 bytes.
PartialSum decode_partial(std::span<const std::byte, PARTIAL_BYTES> in);

/// Whether `join(parts)` gives the one-card contract's bits: no part is inexact and all lie
/// within one window (or some part is NaN, or all are zero).
bool exact_join(std::span<const PartialSum> parts);

/// The output the parts of one row make (see the file comment).
float join(std::span<const PartialSum> parts);

} // namespace cardsim::numerics
