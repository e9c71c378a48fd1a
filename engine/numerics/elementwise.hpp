#pragma once
// The elementwise units and the arg-max: each output one f32 operation (rounded once) on
// correctly rounded functions (functions.hpp), IEEE 754 for infinities and NaNs, every NaN out the
// quiet NaN 0x7FC00000.
//   add:          y_j = a_j + b_j
//   silu_mul:     y_j = silu(g_j) * u_j          (SwiGLU: the gate's SiLU times the up projection)
//   gelu_mul:     y_j = gelu(g_j) * u_j          (GeGLU, exact erf GELU)
//   sigmoid_gate: y_j = x_j * sigmoid(g_j)       (an attention's output gate)
//   swiglu_clamp: g = min(g_j, L), u = min(max(u_j, -L), L) (a NaN stays NaN), t = alpha * g,
//                 y_j = (u + 1) * (g * sigmoid(t))  (gpt-oss's experts; each operation rounded once)
//   argmax:       the lowest index of the largest value (a NaN counts as above every number, so
//                 the first NaN wins); -0 and +0 are equal.

#include <cstddef>
#include <span>

namespace cardsim::numerics {

/// y = a + b.
void add(std::span<const float> a, std::span<const float> b, std::span<float> y);
/// y = silu(g) * u.
void silu_mul(std::span<const float> g, std::span<const float> u, std::span<float> y);
/// y = gelu(g) * u.
void gelu_mul(std::span<const float> g, std::span<const float> u, std::span<float> y);
/// y = x * sigmoid(g).
void sigmoid_gate(std::span<const float> x, std::span<const float> g, std::span<float> y);
/// y = gpt-oss's clamped SwiGLU of g and u with `limit` and `alpha` (see the file comment).
void swiglu_clamp(std::span<const float> g, std::span<const float> u, float limit, float alpha,
                  std::span<float> y);
/// The index of the largest value, the lowest on ties (x not empty).
std::size_t argmax(std::span<const float> x);

} // namespace cardsim::numerics
