#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/numerics/hadamard.hpp"

#include "engine/error.hpp"
#include "engine/numerics/functions.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace cardsim::numerics {
namespace {

[[gnu::always_inline]] inline void butterflies(float* x, std::size_t n) {
    for (std::size_t h = 1; h < n; h <<= 1)
        for (std::size_t i = 0; i < n; i += 2 * h)
            for (std::size_t j = i; j < i + h; ++j) {
                const float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
}

__attribute__((target("avx2"))) void butterflies_avx2(float* x, std::size_t n) {
    butterflies(x, n);
}

} // namespace

void hadamard(std::span<float> x) {
    const std::size_t n = x.size();
    if (n == 0 || !std::has_single_bit(n))
        throw Error("Hadamard rotation: a row of " + std::to_string(n) + " values; a power of two is needed");
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2)
        butterflies_avx2(x.data(), n);
    else
        butterflies(x.data(), n);
    const float c = rsqrt(static_cast<float>(n));
    bool finite = true;
    for (float& v : x) {
        v = v * c;
        finite = finite && std::isfinite(v);
    }
    if (!finite) std::fill(x.begin(), x.end(), std::numeric_limits<float>::quiet_NaN());
}

void hadamard_heads(std::span<float> row, std::size_t head_dim) {
    if (head_dim == 0 || row.size() % head_dim != 0)
        throw Error("Hadamard rotation: a row of " + std::to_string(row.size()) +
                    " values is not whole heads of " + std::to_string(head_dim));
    for (std::size_t h = 0; h < row.size(); h += head_dim)
        hadamard(row.subspan(h, head_dim));
}

} // namespace cardsim::numerics
