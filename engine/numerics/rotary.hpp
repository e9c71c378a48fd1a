#pragma once
// The rotation unit: rotary position embedding, NeoX rotate-half, over the first `rotary_dim`
// values of each head (partial rotary: the rest pass unchanged).
//
// For pair i < rotary_dim / 2 of a head at position pos:
//   f_i = inverse_frequency(i, rotary_dim, theta)   (theta^(-2i / rotary_dim), correctly rounded)
//   a = float(pos) * f_i                            (one f32 multiplication; pos < 2^24 is exact)
//   c = cos(a), s = sin(a)                          (correctly rounded)
//   y_i = x_i * c - x_{i+r/2} * s;   y_{i+r/2} = x_{i+r/2} * c + x_i * s   (each product rounded,
//   then the sum rounded: no fused multiply-add)
// Every NaN out is the quiet NaN 0x7FC00000.
// This is Hugging Face's q * cos + rotate_half(q) * sin in f32 with its angles computed as
// pos x inv_freq in f32.

//
// YaRN (gpt-oss's `rope_scaling`): the pairs turn by a table of frequencies instead, f_i, and cos and
// sin are scaled by `scale` (the attention factor, rounded to f32):
//   a = float(pos) * f_i;  c = cos(a) * scale, s = sin(a) * scale  (cos, sin correctly rounded,
//   each product rounded), then y as above.
// The table is the lowering's (yarn_frequencies): transformers' `_compute_yarn_parameters` in f64,
// each frequency rounded once to f32; the card reads it as it reads a weight.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::numerics {

/// Rotates every head of `row` (heads of head_dim values) in place for position `pos`.
void rotate(std::span<float> row, std::size_t head_dim, std::size_t rotary_dim, double theta,
            std::uint32_t pos);

/// YaRN's parameters (transformers' `rope_type: yarn`).
struct Yarn {
    double factor = 1, beta_fast = 32, beta_slow = 1;
    std::size_t original_max = 4096;
    bool truncate = true;
};

/// The rotary_dim / 2 frequencies of YaRN with base `theta`: pair i blends theta^(-2i/d)
/// (extrapolated) and theta^(-2i/d) / factor (interpolated) by 1 − ramp_i, the ramp running from 0
/// at the pair that turns `beta_fast` times over `original_max` positions to 1 at the one that turns
/// `beta_slow` times (ends floored and ceiled when `truncate`), computed in f64 and rounded to f32.
std::vector<float> yarn_frequencies(std::size_t rotary_dim, double theta, const Yarn& yarn);
/// The same frequencies before the rounding (what an f64 reference turns pairs by).
std::vector<double> yarn_frequencies_f64(std::size_t rotary_dim, double theta, const Yarn& yarn);

/// Rotates every head of `row` in place for position `pos` by the frequencies `freqs`
/// (rotary_dim / 2 of them), cos and sin scaled by `scale` (see the file comment).
void rotate_scaled(std::span<float> row, std::size_t head_dim, std::size_t rotary_dim,
                   std::span<const float> freqs, float scale, std::uint32_t pos);

} // namespace cardsim::numerics
