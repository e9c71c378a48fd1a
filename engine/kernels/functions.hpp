#pragma once
// The transcendental functions the units use, in one place: the numerics library's correctly
// rounded f32 functions (engine/numerics/functions.hpp, each tested against a 332-bit reference).
// The kernels call them on an argument rounded to f32 and use the f32 result; only the encoder's
// act head (its entropy) and a soft cap use the platform's libm log and tanh.

#include "engine/numerics/functions.hpp"

#include <cmath>

namespace cardsim::kernels {

/// f(x) for x rounded to f32, correctly rounded to f32.
inline double exp(double x) {
    return numerics::exp(static_cast<float>(x));
}
inline double sigmoid(double x) {
    return numerics::sigmoid(static_cast<float>(x));
}
inline double silu(double x) {
    return numerics::silu(static_cast<float>(x));
}
inline double softplus(double x) {
    return numerics::softplus(static_cast<float>(x));
}
inline double gelu(double x) {
    return numerics::gelu(static_cast<float>(x));
}
inline double rsqrt(double x) {
    return numerics::rsqrt(static_cast<float>(x));
}
inline double sin(double x) {
    return numerics::sin(static_cast<float>(x));
}
inline double cos(double x) {
    return numerics::cos(static_cast<float>(x));
}
/// The natural log (libm, double): the act head's entropy only.
inline double log(double x) {
    return std::log(x);
}

} // namespace cardsim::kernels
