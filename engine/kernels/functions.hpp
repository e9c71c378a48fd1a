#pragma once
// The transcendental functions the units use, defined in one place. Each is evaluated in IEEE
// double (the platform's libm, glibc on Debian 12) and used in double by the kernels, whose results
// are rounded to f32 once: deterministic on one platform. The numerics issue replaces these by
// algorithms a circuit implements (table + fixed-point interpolation) with stated bounds; every
// kernel calls them through here so that the swap is one change.

namespace cardsim::kernels {

double exp(double x);
/// 1 / (1 + e^-x).
double sigmoid(double x);
/// x · sigmoid(x).
double silu(double x);
/// ln(1 + e^x), as x for x > 20.
double softplus(double x);
/// The exact (erf) GELU: x · (1 + erf(x / √2)) / 2.
double gelu(double x);
/// 1 / √x.
double rsqrt(double x);
double sin(double x);
double cos(double x);
double log(double x);
/// theta^e.
double pow(double theta, double e);

} // namespace cardsim::kernels
