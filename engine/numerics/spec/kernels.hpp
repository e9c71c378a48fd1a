#pragma once
// The spec of the per-unit kernels (norms.hpp, elementwise.hpp, conv.hpp, gated_deltanet.hpp,
// rotary.hpp): each f32 operation as its exact result rounded once (exact.hpp), each function by
// the reference (functions.hpp), each sum by the spec window.

#include "engine/numerics/keep.hpp"
#include "engine/numerics/norms.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::numerics::spec {

std::vector<float> rms_norm(std::span<const float> x, std::span<const float> w, float eps, NormWeight kind);
std::vector<float> layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                              float eps);
std::vector<float> l2_norm(std::span<const float> x, std::size_t group, float eps, float scale);
std::vector<float> silu_mul(std::span<const float> g, std::span<const float> u);
std::vector<float> gelu_mul(std::span<const float> g, std::span<const float> u);
std::vector<float> sigmoid_gate(std::span<const float> x, std::span<const float> g);

/// One conv token: the outputs and the new window (oldest first, (K-1) x channels).
std::vector<float> conv_silu_step(std::span<const float> x, std::span<const float> weights,
                                  std::span<const float> bias, std::vector<float>& window,
                                  std::size_t kernel);
/// The same without the SiLU.
std::vector<float> conv_step(std::span<const float> x, std::span<const float> weights,
                             std::span<const float> bias, std::vector<float>& window, std::size_t kernel);

/// beta and g of each head.
void gdn_gates(std::span<const float> a, std::span<const float> b, std::span<const float> a_log,
               std::span<const float> dt_bias, std::vector<float>& beta, std::vector<float>& g);

/// One delta-rule step: returns o, updates `state`.
std::vector<float> delta_rule_step(std::vector<float>& state, std::span<const float> q,
                                   std::span<const float> k, std::span<const float> v, float g, float beta,
                                   Keep keep);

std::vector<float> gated_rms_norm(std::span<const float> x, std::span<const float> z,
                                  std::span<const float> w, float eps);

std::vector<float> rotate(std::span<const float> row, std::size_t head_dim, std::size_t rotary_dim,
                          double theta, std::uint32_t pos);

} // namespace cardsim::numerics::spec
