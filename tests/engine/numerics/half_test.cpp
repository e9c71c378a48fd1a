// f16 and bf16 conversions against the IEEE rules: every 16-bit pattern, the rounding boundaries
// between every pair of neighbours, and a sweep of f32 inputs against the exact spec rounding and
// (where the CPU has it) the hardware F16C conversion.

#include "engine/numerics/half.hpp"
#include "engine/numerics/spec/exact.hpp"
#include "tests/support/skip.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <immintrin.h>

using namespace cardsim::numerics;
namespace spec = cardsim::numerics::spec;

namespace {

std::uint32_t bits(float x) {
    return std::bit_cast<std::uint32_t>(x);
}
float from_bits(std::uint32_t u) {
    return std::bit_cast<float>(u);
}

bool f16_is_nan_bits(std::uint16_t b) {
    return (b & 0x7C00) == 0x7C00 && (b & 0x3FF) != 0;
}

/// The f32 rounding boundaries between f16 (or bf16) neighbours a < b: their midpoint and the f32
/// values next to it, all of which must round as the exact rule says.
std::vector<float> boundaries(float a, float b) {
    std::vector<float> out;
    double mid = (static_cast<double>(a) + static_cast<double>(b)) / 2; // exact in double
    float m = static_cast<float>(mid);
    if (static_cast<double>(m) == mid) out.push_back(m);
    out.push_back(std::nextafter(m, -INFINITY));
    out.push_back(std::nextafter(m, INFINITY));
    return out;
}

} // namespace

TEST_CASE("every f16 widens to its exact IEEE value and narrows back to itself") {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        F16 h{static_cast<std::uint16_t>(b)};
        float x = to_f32(h);
        if (f16_is_nan_bits(h.bits)) {
            REQUIRE(std::isnan(x));
            REQUIRE((bits(x) >> 31) == (b >> 15));
            REQUIRE((bits(x) & 0x400000) != 0);                          // quiet
            REQUIRE(((bits(x) >> 13) & 0x3FF) == ((b & 0x3FF) | 0x200)); // payload kept, quiet set
            REQUIRE(to_f16(x).bits == (b | 0x200));
            continue;
        }
        if ((b & 0x7C00) == 0x7C00) {
            REQUIRE(std::isinf(x));
            REQUIRE(std::signbit(x) == ((b >> 15) != 0));
        } else {
            REQUIRE(spec::value(x) == spec::value(h));
            REQUIRE(std::signbit(x) == ((b >> 15) != 0));
        }
        REQUIRE(to_f16(x).bits == b);
    }
}

TEST_CASE("f32 to f16 rounds to nearest even at every boundary between neighbouring f16 values") {
    for (std::uint32_t b = 0; b < 0x7C00; ++b) { // positive finite f16 and its successor
        for (std::uint32_t sign : {0u, 0x8000u}) {
            float lo = to_f32(F16{static_cast<std::uint16_t>(b | sign)});
            float hi = to_f32(F16{static_cast<std::uint16_t>((b + 1) | sign)});
            if (b + 1 == 0x7C00) hi = sign ? -65536.0f : 65536.0f; // the overflow threshold's other side
            for (float x : boundaries(std::min(lo, hi), std::max(lo, hi))) {
                std::uint32_t want = spec::round_to_format(spec::value(x), binary16);
                if (want == 0 && std::signbit(x)) want = 0x8000;
                REQUIRE(to_f16(x).bits == want);
            }
        }
    }
}

TEST_CASE("the f16 midpoint tie goes to the even neighbour and overflow goes to infinity") {
    REQUIRE(to_f16(1.0f + 0x1p-11f).bits == 0x3C00);     // tie between 1 and 1+2^-10: even is 1
    REQUIRE(to_f16(1.0f + 3 * 0x1p-11f).bits == 0x3C02); // tie between 1+2^-10 and 1+2^-9: even
    REQUIRE(to_f16(65519.996f).bits == 0x7BFF);          // just below the threshold
    REQUIRE(to_f16(65520.0f).bits == 0x7C00);            // the threshold itself: tie to even inf
    REQUIRE(to_f16(-65520.0f).bits == 0xFC00);
    REQUIRE(to_f16(0x1p-25f).bits == 0x0000); // half the smallest subnormal: tie to 0
    REQUIRE(to_f16(std::nextafter(0x1p-25f, 1.0f)).bits == 0x0001);
    REQUIRE(to_f16(-0.0f).bits == 0x8000);
    REQUIRE(to_f16(-0x1p-30f).bits == 0x8000); // underflow keeps the sign
}

TEST_CASE("f32 to f16 agrees with the exact spec rounding on a sweep of f32 patterns") {
    for (std::uint64_t u = 0; u < (1ull << 32); u += 40009) {
        float x = from_bits(static_cast<std::uint32_t>(u));
        if (!std::isfinite(x)) continue;
        std::uint32_t want = spec::round_to_format(spec::value(x), binary16);
        if ((want & 0x7FFF) == 0 && std::signbit(x)) want = 0x8000;
        REQUIRE(to_f16(x).bits == want);
    }
}

__attribute__((target("f16c"))) static std::uint16_t hardware_f16(float x) {
    return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}

TEST_CASE("f32 to f16 agrees with the CPU's F16C conversion, NaNs included") {
    if (!__builtin_cpu_supports("f16c")) CARDSIM_SKIP("no F16C on this CPU");
    std::uint64_t mismatches = 0;
    for (std::uint64_t u = 0; u < (1ull << 32); u += 61) {
        float x = from_bits(static_cast<std::uint32_t>(u));
        if (to_f16(x).bits != hardware_f16(x)) ++mismatches;
    }
    REQUIRE(mismatches == 0);
}

TEST_CASE("every bf16 widens exactly, narrows back, and rounds to nearest even at every boundary") {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        BF16 h{static_cast<std::uint16_t>(b)};
        float x = to_f32(h);
        bool nan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
        if (nan) {
            REQUIRE(std::isnan(x));
            REQUIRE(to_bf16(x).bits == (b | 0x40));
            continue;
        }
        if ((b & 0x7F80) != 0x7F80) REQUIRE(spec::value(x) == spec::value(h));
        REQUIRE(bits(x) == b << 16); // bf16 is the top half of the f32
        REQUIRE(to_bf16(x).bits == b);
        if ((b & 0x7FFF) < 0x7F80) {
            float next =
                (b & 0x7FFF) + 1 == 0x7F80 ? INFINITY : to_f32(BF16{static_cast<std::uint16_t>(b + 1)});
            if (std::isinf(next)) continue; // the overflow side is checked by the sweep below
            for (float y : boundaries(std::min(x, next), std::max(x, next))) {
                std::uint32_t want = spec::round_to_format(spec::value(y), bfloat16);
                if (want == 0 && std::signbit(y)) want = 0x8000;
                REQUIRE(to_bf16(y).bits == want);
            }
        }
    }
}

TEST_CASE("f32 to bf16 agrees with the exact spec rounding on a sweep of f32 patterns, overflow included") {
    REQUIRE(to_bf16(from_bits(0x7F7FFFFF)).bits == 0x7F80); // FLT_MAX rounds up to infinity
    REQUIRE(to_bf16(from_bits(0x7F7F7FFF)).bits == 0x7F7F);
    REQUIRE(to_bf16(from_bits(0x7F7F8000)).bits == 0x7F80); // tie to even: 0x7F80 (inf) is even
    for (std::uint64_t u = 0; u < (1ull << 32); u += 40013) {
        float x = from_bits(static_cast<std::uint32_t>(u));
        if (!std::isfinite(x)) continue;
        std::uint32_t want = spec::round_to_format(spec::value(x), bfloat16);
        if ((want & 0x7FFF) == 0 && std::signbit(x)) want = 0x8000;
        REQUIRE(to_bf16(x).bits == want);
    }
}

TEST_CASE("f16 parts are the exact significand and exponent of every finite f16") {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        F16 h{static_cast<std::uint16_t>(b)};
        if (is_nonfinite(h)) continue;
        F16Parts p = parts(h);
        REQUIRE(std::abs(p.significand) < 2048);
        REQUIRE(spec::Rational(p.significand) * spec::power_of_two(p.exponent) == spec::value(h));
    }
}
