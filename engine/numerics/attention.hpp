#pragma once
// The attention unit's arithmetic: one query head over a cache of one kv head, as `vector` (f32)
// or `array` (integer) math.
//
// Common to both: keys and values are rows of head_dim values kept as the cache keeps them
// (keep.hpp). With Int8RowsRotated the query is rotated (hadamard.hpp) before scoring and the
// output rotated back, so q.k and the output are in the model's basis. After the scores s_t:
//   m = max_t s_t;  p_t = exp(s_t - m)  (f32 subtraction, correctly rounded exp);
//   Z = window_sum of the p_t (exact_sum.hpp), rounded once;
//   out_j = (window sum over positions of the weighted values, rounded once) / Z  (f32 division).
// With a sink (gpt-oss's learnt per-head logit `s_sink`), m = max(max_t s_t, s_sink) and Z also
// sums p_sink = exp(s_sink - m): the sink takes its share of the softmax and adds no value.
// Any NaN or infinity in the query, a key or a value (or a NaN row scale), a score that
// overflows, or a sink that is not finite, makes every output NaN.
//
// Vector math: s_t = window_sum_j(q_j x k_tj exact products), rounded once, times `scale` (f32
// multiplication); out_j's sum is over the exact products p_t x v_tj. Vector math also reads rows
// kept as F32: the encoder's self attention over its own key and value rows.
//
// Array math: the query is quantised under `query_scheme` (blocks of a multiple of 32 values, or
// Row). s_t = window sum of the terms (rounded once) times `scale`, the terms being, per word w:
//   F16 keys: per value j, c_wj x m_tj x 2^(e_w + e_tj) (m, e the key's f16 parts);
//   Int8 keys: per chunk of 32 values, (sum of c_wj x code_tj) x m_d x 2^(e_w + e_d) (d the row's
//   f16 scale).
// The weights w_t = p_t x d_t (f32 multiplication by the value row's scale; p_t for F16 values)
// are quantised as unsigned codes u_t under a power of two per block of VALUE_BLOCK positions
// (Scheme { Values(VALUE_BLOCK), LeastPowerOfTwoOver255, 1 }). out_j's terms are, per block b of
// positions: Int8 values: (sum over t in b of u_t x code_tj) x 2^E_b; F16 values: per position,
// u_t x m_tj x 2^(E_b + e_tj).

#include "engine/numerics/keep.hpp"
#include "engine/numerics/scheme.hpp"

#include <cstddef>
#include <optional>
#include <span>

namespace cardsim::numerics {

/// Positions per block of the array attention's weight codes (one power of two each).
inline constexpr std::size_t VALUE_BLOCK = 32;

/// The weights' scheme of array attention.
inline const Scheme weight_scheme{Values{VALUE_BLOCK}, LeastPowerOfTwoOver255{}, 1};

/// One kv head's cache: `positions` key rows and value rows of `head_dim` values each, kept as
/// `keep` (F16, Int8Rows or Int8RowsRotated; F32 for vector math only), row t at byte
/// t x kept_bytes(keep, head_dim).
struct CacheView {
    Keep keep = Keep::F16;
    std::size_t head_dim = 0;
    std::size_t positions = 0;
    std::span<const std::byte> keys;
    std::span<const std::byte> values;
};

/// Checks a cache view (a cache keep format, byte counts, a power-of-two head for rotated rows, at
/// least one position), throwing cardsim::Error naming what is wrong.
void check(const CacheView& cache);

/// Vector (f32) attention of `query` (head_dim values) over `cache`, into `out` (head_dim values).
void attend_vector(std::span<const float> query, const CacheView& cache, float scale, std::span<float> out,
                   std::optional<float> sink = std::nullopt);

/// Array attention of `query` over `cache` with the query quantised under `query_scheme`.
void attend_array(std::span<const float> query, const CacheView& cache, float scale,
                  const Scheme& query_scheme, std::span<float> out, std::optional<float> sink = std::nullopt);

} // namespace cardsim::numerics
