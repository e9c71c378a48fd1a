#pragma once
// The norm unit's arithmetic: RMSNorm (plain or zero-centred weight, over groups for per-head QK
// norms), LayerNorm and L2 norm. Every operation below is one f32 operation rounded once (x, /, +,
// -) or a correctly rounded function (functions.hpp); sums are window sums (exact_sum.hpp) of
// exact products, so the order of summation never matters.
//
// RMSNorm of a group of g values, weights w (g of them), eps:
//   r = rsqrt((window_sum_j x_j*x_j) / g + eps);   y_j = (x_j * r) * w'_j
//   with w'_j = 1 + w_j (zero-centred, Qwen3-Next / Qwen3.5) or w_j.
// LayerNorm of n values: mean = (window_sum_j x_j) / n; d_j = x_j - mean;
//   r = rsqrt((window_sum_j d_j*d_j) / n + eps);   y_j = (d_j * r) * w_j (+ b_j when given).
// L2 norm of a group, times a scale s (Gated-DeltaNet: dk^-1/2 for q, 1 for k):
//   r = rsqrt(window_sum_j x_j*x_j + eps);   y_j = (x_j * r) * s   (s = 1 is exactly x_j * r).
// A NaN or an infinity in a group (or a LayerNorm mean that overflows) makes that group's outputs
// NaN; every NaN out is the quiet NaN 0x7FC00000.

#include <cstddef>
#include <span>

namespace cardsim::numerics {

/// Whether an RMSNorm's weight is applied as w or as 1 + w.
enum class NormWeight { Plain, ZeroCentred };

/// RMSNorm of each group of w.size() values of x, into y (y.size() == x.size()).
void rms_norm(std::span<const float> x, std::span<const float> w, float eps, NormWeight kind,
              std::span<float> y);

/// LayerNorm of x with weight w and bias b (b empty: no bias), into y.
void layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b, float eps,
                std::span<float> y);

/// L2 norm of each group of `group` values of x, times `scale`, into y.
void l2_norm(std::span<const float> x, std::size_t group, float eps, float scale, std::span<float> y);

} // namespace cardsim::numerics
