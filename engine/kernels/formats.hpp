#pragma once
// How the card keeps what it stores: the weight format and activation scheme of a card config,
// the bytes of a cached attention row in each cache keep format, and of a Gated-DeltaNet state.

#include "engine/card/card_config.hpp"
#include "engine/numerics/knob.hpp"
#include "engine/numerics/scheme.hpp"
#include "engine/numerics/weights.hpp"

#include <cstddef>
#include <span>

namespace cardsim::kernels {

/// The numerics weight format of a card config (code bits, block scale kind, block size as the
/// scale group). The matvec sums each output's whole row exactly, so a config's `group_size` must
/// be `row`; anything else is a cardsim::Error naming the key.
numerics::WeightFormat weight_format(const card::CardConfig& c);

/// The activation scheme of a knob point: sub32 blocks of 32 values with 4 significand bits, or the
/// weights' blocks with 23; one or two words.
numerics::Scheme activation_scheme(const numerics::EngineNumerics& n);

/// The layout of a packed `[rows, cols]` matrix on card `c` (rows padded to the DDR burst, 64 B).
numerics::MatrixLayout matrix_layout(const card::CardConfig& c, std::size_t rows, std::size_t cols);

/// Bytes one cached head row of `head_dim` values takes: f16 2 per value; int8 and int8_hadamard
/// one per value plus an f32 scale (4 bytes, first).
std::size_t cache_row_bytes(numerics::CacheFormat f, std::size_t head_dim);

/// Writes one head row into its cache bytes. f16: each value rounded to nearest even. int8: scale
/// s = max|x| / 127 in f32 (0 for a zero row), codes round-half-even(x / s) clamped to ±127.
/// int8_hadamard: the same after the row is rotated by the normalised Walsh–Hadamard matrix of
/// `head_dim` (a power of two), computed in double by the fixed butterfly order and rounded to f32.
void encode_cache_row(numerics::CacheFormat f, std::span<const float> row, std::span<std::byte> out);

/// Reads one head row back as f32 (int8: code × scale; int8_hadamard rotates back, H being its own
/// inverse).
void decode_cache_row(numerics::CacheFormat f, std::span<const std::byte> bytes, std::span<float> out);

/// Bytes of one Gated-DeltaNet state element: 4 (f32) or 2 (f16).
std::size_t state_element_bytes(numerics::StateFormat f);

/// The normalised Walsh–Hadamard transform of `x` in place (length a power of two), in double.
void hadamard(std::span<double> x);

} // namespace cardsim::kernels
