#pragma once
// The reference of the correctly rounded functions (engine/numerics/functions.hpp): each function's
// exact value rounded once to f32, decided from a long double evaluation with formulas of its own
// where that is unambiguous, else from a 100-digit Boost.Multiprecision evaluation converted
// exactly to a rational and rounded by the spec rounding.

#include "engine/numerics/functions.hpp"

namespace cardsim::numerics::spec {

/// f(x) correctly rounded to f32, by the reference route.
float reference(Function f, float x);

/// theta^(-2i/d) correctly rounded to f32, by the reference route.
float reference_inverse_frequency(int i, int d, double theta);

/// How many times `reference` needed its multiprecision stage (for the sweep's report).
unsigned long long reference_hard_cases();

} // namespace cardsim::numerics::spec
