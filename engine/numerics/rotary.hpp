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

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::numerics {

/// Rotates every head of `row` (heads of head_dim values) in place for position `pos`.
void rotate(std::span<float> row, std::size_t head_dim, std::size_t rotary_dim, double theta,
            std::uint32_t pos);

} // namespace cardsim::numerics
