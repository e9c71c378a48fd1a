#pragma once
// Request traces made up: Poisson arrivals with prompt and output lengths drawn from ranges.

#include "serve/request.hpp"

#include <cstdint>
#include <string>

namespace cardsim::serve {

/// Token lengths drawn uniformly from [low, high] (low = high: a fixed length).
struct Lengths {
    std::size_t low = 1, high = 1;
};

/// Reads `N` (a fixed length) or `LOW:HIGH` for the option `option`; refuses (cardsim::Error naming
/// the option) 0, LOW > HIGH and anything not a whole number.
Lengths parse_lengths(const std::string& text, const std::string& option);

/// A Poisson request stream: `count` requests arriving at `rate` a second on average (exponential
/// gaps; the first at its first gap), each with lengths drawn from `prompt` and `output`.
struct PoissonSpec {
    double rate = 1;
    std::size_t count = 1;
    Lengths prompt{16, 16}, output{16, 16};
    std::uint64_t seed = 1;
};

/// The most requests `poisson` makes (a trace of them is about 200 MB).
inline constexpr std::size_t max_generated = 10'000'000;

/// The requests of `spec`. Deterministic: the same spec gives the same trace (std::mt19937_64, whose
/// sequence the standard fixes; uniforms from its top 53 bits; gaps by inverse CDF). Refuses a rate
/// that is not positive and finite, and a count of 0 or above `max_generated`.
std::vector<Request> poisson(const PoissonSpec& spec);

} // namespace cardsim::serve
