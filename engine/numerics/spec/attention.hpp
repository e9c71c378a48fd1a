#pragma once
// The spec of the attention unit (engine/numerics/attention.hpp) in exact rationals, reading the
// cache's bytes itself.

#include "engine/numerics/attention.hpp"

#include <vector>

namespace cardsim::numerics::spec {

/// Vector attention, from the contract.
std::vector<float> attend_vector(std::span<const float> query, const CacheView& cache, float scale,
                                 std::optional<float> sink = std::nullopt);

/// Array attention, from the contract.
std::vector<float> attend_array(std::span<const float> query, const CacheView& cache, float scale,
                                const Scheme& query_scheme, std::optional<float> sink = std::nullopt);

} // namespace cardsim::numerics::spec
