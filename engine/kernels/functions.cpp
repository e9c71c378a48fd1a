#include "engine/kernels/functions.hpp"

#include <cmath>

namespace cardsim::kernels {

double exp(double x) {
    return std::exp(x);
}
double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}
double silu(double x) {
    return x * sigmoid(x);
}
double softplus(double x) {
    return x > 20.0 ? x : std::log1p(std::exp(x));
}
double gelu(double x) {
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double rsqrt(double x) {
    return 1.0 / std::sqrt(x);
}
double sin(double x) {
    return std::sin(x);
}
double cos(double x) {
    return std::cos(x);
}
double log(double x) {
    return std::log(x);
}
double pow(double theta, double e) {
    return std::pow(theta, e);
}

} // namespace cardsim::kernels
