// Stage three of the correctly rounded functions: 332-bit Boost.Multiprecision evaluation, rounded
// once to f32 by this file's own conversion (the integer significand with a sticky bit).

#include "engine/numerics/functions.hpp"
#include "engine/numerics/rounding.hpp"

#include <boost/math/special_functions/erf.hpp>
#include <boost/math/special_functions/log1p.hpp>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <boost/multiprecision/cpp_int.hpp>

namespace cardsim::numerics::detail {
namespace {

using Big = boost::multiprecision::cpp_bin_float_100;
using boost::multiprecision::cpp_int;

/// v rounded once to f32: 102 bits of significand with the rest as a sticky bit, then the dyadic
/// rounding.
float to_f32(const Big& v) {
    if (v == 0) return 0.0f;
    const bool negative = v < 0;
    const Big a = negative ? Big(-v) : v;
    const int e = static_cast<int>(boost::multiprecision::ilogb(a));
    const Big scaled = boost::multiprecision::ldexp(a, 100 - e); // in [2^100, 2^101)
    const Big whole = boost::multiprecision::trunc(scaled);
    cpp_int m = whole.convert_to<cpp_int>();
    m <<= 1;
    if (scaled != whole) m |= 1; // sticky
    unsigned __int128 bits = 0;
    for (int i = static_cast<int>(msb(m)); i >= 0; --i)
        bits = bits << 1 | (bit_test(m, static_cast<unsigned>(i)) ? 1 : 0);
    return round_to_f32(negative, bits, e - 101);
}

} // namespace

float multiprecision(Function f, float xf) {
    const Big x = xf;
    switch (f) {
    case Function::Exp:
        return to_f32(exp(x));
    case Function::Sigmoid:
        return to_f32(Big(1) / (1 + exp(-x)));
    case Function::Silu:
        return to_f32(x / (1 + exp(-x)));
    case Function::Softplus:
        return to_f32(x > 0 ? Big(x + boost::math::log1p(exp(-x))) : Big(boost::math::log1p(exp(x))));
    case Function::Rsqrt:
        return to_f32(Big(1) / sqrt(x));
    case Function::Sin:
        return to_f32(sin(x));
    case Function::Cos:
        return to_f32(cos(x));
    case Function::Gelu:
        return to_f32(x / 2 * boost::math::erfc(-x / sqrt(Big(2))));
    }
    return 0;
}

float multiprecision_inverse_frequency(int i, int d, double theta) {
    return to_f32(pow(Big(theta), Big(-2 * i) / d));
}

} // namespace cardsim::numerics::detail
