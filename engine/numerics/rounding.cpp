#include "engine/numerics/rounding.hpp"

#include <bit>

namespace cardsim::numerics {

std::uint32_t round_to_format(bool negative, unsigned __int128 magnitude, int exponent, BinaryFormat f) {
    const int fraction_bits = f.precision - 1;
    const std::uint32_t sign = negative ? std::uint32_t{1} << (f.exponent_bits + fraction_bits) : 0;
    const std::uint32_t inf = ((std::uint32_t{1} << f.exponent_bits) - 1) << fraction_bits;
    if (magnitude == 0) return sign;
    const int n = bit_length(magnitude);
    const int top = exponent + n - 1; // value in [2^top, 2^(top+1))
    // The place of the last significand bit: precision bits below a normal top, fixed for subnormals.
    const int ulp = (top < f.min_exponent ? f.min_exponent : top) - fraction_bits;
    const int shift = ulp - exponent; // bits of `magnitude` below the last place
    unsigned __int128 q = 0;
    if (shift <= 0) {
        q = magnitude << -shift; // exact: q < 2^precision since n - shift <= precision
    } else if (shift < n) {
        q = magnitude >> shift;
        const unsigned __int128 rest = magnitude & ((static_cast<unsigned __int128>(1) << shift) - 1);
        const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
        if (rest > half || (rest == half && (q & 1) != 0)) ++q;
    } else if (shift == n) {
        // value in [half an ulp, an ulp): a tie only at a power of two, which goes to even zero.
        q = magnitude == (static_cast<unsigned __int128>(1) << (n - 1)) ? 0 : 1;
    } // else below half an ulp: q = 0
    int place = ulp;
    if (q >> f.precision) { // carried to the next binade: q = 2^precision, even
        q >>= 1;
        ++place;
    }
    if (q == 0) return sign;
    if ((q >> fraction_bits) == 0) return sign | static_cast<std::uint32_t>(q); // subnormal
    const int e = place + fraction_bits;
    if (e > f.max_exponent) return sign | inf;
    const int bias = (1 << (f.exponent_bits - 1)) - 1;
    const auto field = static_cast<std::uint32_t>(e + bias);
    const auto fraction = static_cast<std::uint32_t>(q) & ((std::uint32_t{1} << fraction_bits) - 1);
    return sign | field << fraction_bits | fraction;
}

float round_to_f32(bool negative, unsigned __int128 magnitude, int exponent) {
    return std::bit_cast<float>(round_to_format(negative, magnitude, exponent, binary32));
}

} // namespace cardsim::numerics
