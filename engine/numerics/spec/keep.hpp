#pragma once
// The spec of the keep formats and of the Hadamard rotation (engine/numerics/keep.hpp,
// hadamard.hpp): each f32 operation as its exact result rounded once, the row quantiser in
// rationals, the bytes packed here.

#include "engine/numerics/keep.hpp"
#include "engine/numerics/spec/exact.hpp"

#include <span>
#include <vector>

namespace cardsim::numerics::spec {

/// The rotation of `x` (a power of two long), straight from hadamard.hpp.
std::vector<float> hadamard(std::span<const float> x);

/// The bytes of `x` kept as `k`.
std::vector<std::byte> keep_row(std::span<const float> x, Keep k);

} // namespace cardsim::numerics::spec
