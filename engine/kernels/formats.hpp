#pragma once
// How the card keeps what it stores: the weight format and activation scheme of a card config,
// the bytes of a cached attention row in each cache keep format, and of a Gated-DeltaNet state.

#include "engine/card/card_config.hpp"
#include "engine/numerics/keep.hpp"
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

/// The numerics keep format of a cache knob: F16, Int8Rows, Int8RowsRotated.
numerics::Keep keep_of(numerics::CacheFormat f);

/// Bytes one cached head row of `head_dim` values takes (numerics::kept_bytes).
std::size_t cache_row_bytes(numerics::CacheFormat f, std::size_t head_dim);

/// Writes one head row into its cache bytes (numerics::keep_row).
void encode_cache_row(numerics::CacheFormat f, std::span<const float> row, std::span<std::byte> out);

/// The query scheme of array attention at knob point `n` (the contract's).
numerics::Scheme attention_query_scheme(const numerics::EngineNumerics& n);

/// The numerics keep format of a state knob: F32 or F16.
numerics::Keep state_keep(numerics::StateFormat f);

/// Bytes of one Gated-DeltaNet state element: 4 (f32) or 2 (f16).
std::size_t state_element_bytes(numerics::StateFormat f);

} // namespace cardsim::kernels
