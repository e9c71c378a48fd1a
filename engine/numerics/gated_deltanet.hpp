#pragma once
// The Gated-DeltaNet units: the gates (write strength and decay), the delta-rule state step, and
// the output norm gated by SiLU. Every operation is one f32 operation rounded once or a correctly
// rounded function; sums are window sums of exact products.
//
// Gates, per value head h:  beta_h = sigmoid(b_h);  g_h = -(exp(A_log_h) * softplus(a_h + dt_bias_h)).
// State step of one value head, S a dk x dv matrix (S[i][j] at i * dv + j), q and k of dk values,
// v of dv values (q, k already L2-normed and q scaled by the model):
//   decay = exp(g);  S_ij <- S_ij * decay
//   kv_j = window_sum_i S_ij * k_i;  delta_j = beta * (v_j - kv_j)
//   S_ij <- S_ij + k_i * delta_j
//   o_j = window_sum_i S_ij * q_i
// then S is kept as its keep format (F32, or each value rounded to f16). If any input or state
// value is not finite, or a step overflows, o and S become NaN. Every NaN out is the quiet NaN
// 0x7FC00000.
// Gated RMSNorm of a head's output x by z, weights w (plain), eps:
//   r = rsqrt((window_sum_j x_j*x_j) / n + eps);  y_j = (w_j * (x_j * r)) * silu(z_j).

#include "engine/numerics/keep.hpp"

#include <span>

namespace cardsim::numerics {

/// The gates of every value head: beta and g (each a.size() values).
void gdn_gates(std::span<const float> a, std::span<const float> b, std::span<const float> a_log,
               std::span<const float> dt_bias, std::span<float> beta, std::span<float> g);

/// One delta-rule step of one value head; `state` (dk x dv) is updated in place, `o` gets dv values.
void delta_rule_step(std::span<float> state, std::span<const float> q, std::span<const float> k,
                     std::span<const float> v, float g, float beta, Keep keep, std::span<float> o);

/// The output norm of each head of w.size() values, gated by SiLU(z).
void gated_rms_norm(std::span<const float> x, std::span<const float> z, std::span<const float> w, float eps,
                    std::span<float> y);

} // namespace cardsim::numerics
