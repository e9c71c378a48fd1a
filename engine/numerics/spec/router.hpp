#pragma once
// The spec of the router and of the expert combine (engine/numerics/router.hpp, combine.hpp):
// the choice by exact comparison of the logits' values, each f32 operation its exact result
// rounded once (exact.hpp), exp by the reference (functions.hpp), each sum by the spec window.

#include "engine/numerics/combine.hpp"
#include "engine/numerics/router.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace cardsim::numerics::spec {

/// A row's chosen experts and their weights.
struct Routing {
    std::vector<std::uint32_t> experts;
    std::vector<float> weights;
};

/// The k experts `logits` choose and their weights under `norm` (1 <= k <= logits.size()).
Routing route(std::span<const float> logits, std::size_t k, RouterNorm norm);

/// The combine of `weights` over `outputs` (k rows of n values) and `shared`.
std::vector<float> combine(std::span<const float> weights, std::span<const float> outputs, std::size_t n,
                           const std::optional<SharedExpert>& shared);

} // namespace cardsim::numerics::spec
