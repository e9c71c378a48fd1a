// The nonlinear functions against the independent reference: every function on a dense sample of
// all f32 patterns (every binade, both signs), on the special values, and on the inputs around
// their rounding-sensitive regions. The exhaustive sweep over all 2^32 inputs is
// `cardsim numerics --sweep FUNCTION` (see engine/numerics/README.md).

#include "engine/numerics/functions.hpp"
#include "engine/numerics/spec/functions.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

/// Compares f with the reference on every `stride`-th f32 pattern starting at `offset`, returning
/// the number of inputs whose bits differ.
std::uint64_t sweep(Function f, std::uint64_t stride, std::uint64_t offset) {
    std::uint64_t wrong = 0;
    for (std::uint64_t u = offset; u < (1ull << 32); u += stride) {
        const float x = std::bit_cast<float>(static_cast<std::uint32_t>(u));
        const float got = apply(f, x), want = spec::reference(f, x);
        if (!same_bits(got, want)) {
            if (wrong < 5)
                WARN(name(f) << "(" << x << " = 0x" << std::hex << u << ") = " << got << " want " << want);
            ++wrong;
        }
    }
    return wrong;
}

/// Every input in [lo, hi] (floats of one sign, lo <= hi in magnitude), compared.
std::uint64_t dense(Function f, float lo, float hi) {
    std::uint64_t wrong = 0;
    for (float x = lo; x <= hi; x = std::nextafter(x, INFINITY))
        if (!same_bits(apply(f, x), spec::reference(f, x))) ++wrong;
    return wrong;
}

} // namespace

TEST_CASE("exp is correctly rounded on a dense sample of all f32 inputs") {
    REQUIRE(sweep(Function::Exp, 2039, 7) == 0);
    REQUIRE(dense(Function::Exp, 88.5f, 88.8f) == 0);      // the overflow threshold
    REQUIRE(dense(Function::Exp, -103.99f, -103.9f) == 0); // the last subnormals
}

TEST_CASE("sigmoid is correctly rounded on a dense sample of all f32 inputs") {
    REQUIRE(sweep(Function::Sigmoid, 2039, 11) == 0);
    REQUIRE(dense(Function::Sigmoid, 16.5f, 17.5f) == 0); // where it reaches 1
}

TEST_CASE("silu is correctly rounded on a dense sample of all f32 inputs") {
    REQUIRE(sweep(Function::Silu, 2039, 13) == 0);
    REQUIRE(dense(Function::Silu, std::numeric_limits<float>::denorm_min(), 0x1p-140f) ==
            0); // x/2 on a midpoint
    REQUIRE(dense(Function::Silu, -0x1p-140f, -std::numeric_limits<float>::denorm_min()) == 0);
}

TEST_CASE("softplus is correctly rounded on a dense sample of all f32 inputs") {
    REQUIRE(sweep(Function::Softplus, 2039, 17) == 0);
    REQUIRE(dense(Function::Softplus, 15.0f, 17.0f) == 0); // where it rounds to x
}

TEST_CASE("rsqrt is correctly rounded on a dense sample of all f32 inputs and exact on powers of four") {
    REQUIRE(sweep(Function::Rsqrt, 2039, 19) == 0);
    REQUIRE(dense(Function::Rsqrt, 1.0f, 1.0f + 0x1p-10f) == 0);
    for (int k = -74; k < 64; ++k)
        REQUIRE(rsqrt(std::ldexp(1.0f, 2 * k)) == std::ldexp(1.0f, -k));
}

TEST_CASE("sin and cos are correctly rounded on a dense sample of all f32 inputs") {
    REQUIRE(sweep(Function::Sin, 4093, 23) == 0);
    REQUIRE(sweep(Function::Cos, 4093, 29) == 0);
    REQUIRE(dense(Function::Sin, 3.1415f, 3.1417f) == 0); // around pi
    REQUIRE(dense(Function::Cos, 1.5707f, 1.5709f) == 0); // around pi/2
}

TEST_CASE("gelu is correctly rounded on a dense sample of all f32 inputs") {
    REQUIRE(sweep(Function::Gelu, 2039, 31) == 0);
    REQUIRE(dense(Function::Gelu, -14.5f, -13.5f) == 0); // the underflow of the negative tail
    REQUIRE(dense(Function::Gelu, std::numeric_limits<float>::denorm_min(), 0x1p-140f) == 0);
}

TEST_CASE("the special values of every function are as documented") {
    const float inf = INFINITY, nan = NAN;
    for (Function f : all_functions)
        REQUIRE(std::bit_cast<std::uint32_t>(apply(f, nan)) == 0x7FC00000u);
    REQUIRE(same_bits(exp(-inf), 0.0f));
    REQUIRE(same_bits(exp(inf), inf));
    REQUIRE(same_bits(sigmoid(-inf), 0.0f));
    REQUIRE(same_bits(sigmoid(inf), 1.0f));
    REQUIRE(same_bits(silu(-inf), -0.0f));
    REQUIRE(same_bits(silu(-0.0f), -0.0f));
    REQUIRE(same_bits(silu(-200.0f), -0.0f)); // underflow keeps the sign
    REQUIRE(same_bits(softplus(-inf), 0.0f));
    REQUIRE(same_bits(softplus(inf), inf));
    REQUIRE(same_bits(softplus(0.0f), std::log(2.0f)));
    REQUIRE(same_bits(rsqrt(0.0f), inf));
    REQUIRE(same_bits(rsqrt(-0.0f), -inf));
    REQUIRE(std::isnan(rsqrt(-1.0f)));
    REQUIRE(same_bits(rsqrt(inf), 0.0f));
    REQUIRE(std::isnan(sin(inf)));
    REQUIRE(std::isnan(cos(-inf)));
    REQUIRE(same_bits(sin(-0.0f), -0.0f));
    REQUIRE(same_bits(gelu(-inf), -0.0f));
    REQUIRE(same_bits(gelu(inf), inf));
    REQUIRE(same_bits(exp(1.0f), 2.71828182845904523536f));
    REQUIRE(same_bits(sigmoid(0.0f), 0.5f));
}

TEST_CASE("rotary inverse frequencies are correctly rounded for common bases and dimensions") {
    for (double theta : {10000.0, 160000.0, 1e6, 1e7, 5e5})
        for (int d : {16, 32, 64, 128, 256})
            for (int i = 0; 2 * i < d; ++i)
                REQUIRE(same_bits(inverse_frequency(i, d, theta),
                                  spec::reference_inverse_frequency(i, d, theta)));
    REQUIRE(inverse_frequency(0, 64, 10000.0) == 1.0f);
}
