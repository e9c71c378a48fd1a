#pragma once
// How rows are kept between steps: attention caches (one row per position and kv head) and the
// Gated-DeltaNet state.
//
// Formats and their bytes (little-endian), for a row of n values:
// - F32: n x 4 bytes, the values.
// - F16: n x 2 bytes, each value rounded to f16 (nearest even, subnormals kept, half.hpp).
// - Int8Rows: [f16 scale d][n int8 codes]: d = amax / 127 rounded once to f16 and clamped to
//   65504, codes round_half_even(x / d) saturated to [-127, 127] (the f16-scale weight rule with
//   one group per row); a row with a NaN or inf stores d = NaN (0x7E00) and zero codes, and reads
//   back as NaN; d = 0 (all zero) reads back as zeros. The value of code c is c x d, exact in f32.
// - Int8RowsRotated: the Int8Rows of hadamard(x) (hadamard.hpp; n a power of two). Reading it gives
//   the rotated values; attention rotates its query the same way and its output back.

#include "engine/numerics/half.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace cardsim::numerics {

/// A keep format.
enum class Keep : std::uint8_t { F32, F16, Int8Rows, Int8RowsRotated };

/// `F32`, `F16`, `Int8Rows`, `Int8RowsRotated`.
std::string_view name(Keep k);

/// Bytes of one kept row of n values.
std::size_t kept_bytes(Keep k, std::size_t n);

/// Writes `x` kept as `k` into `out` (kept_bytes(k, x.size()) bytes; throws cardsim::Error when the
/// size is wrong or a rotated row's length is not a power of two).
void keep_row(std::span<const float> x, Keep k, std::span<std::byte> out);

/// `x` kept as `k`, as new bytes.
std::vector<std::byte> keep_row(std::span<const float> x, Keep k);

/// The f32 values a kept row of out.size() values stands for (the rotated values for
/// Int8RowsRotated).
void read_row(std::span<const std::byte> bytes, Keep k, std::span<float> out);

/// An Int8Rows row's parts without converting: the scale and the codes.
struct Int8Row {
    F16 scale;
    std::span<const std::int8_t> codes;
};
/// Reads an Int8Rows or Int8RowsRotated row of n values.
Int8Row int8_row(std::span<const std::byte> bytes, std::size_t n);

/// Rounds every value of `x` to what keeping it as `k` gives back (F32 and F16 only: the state).
void keep_values(std::span<float> x, Keep k);

} // namespace cardsim::numerics
