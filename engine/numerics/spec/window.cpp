#include "engine/numerics/spec/window.hpp"

#include <optional>

namespace cardsim::numerics::spec {

Rational truncate(const Rational& x, int place) {
    const Rational steps = x / power_of_two(place);
    Integer t = numerator(steps) / denominator(steps); // C++ integer division truncates toward zero
    return Rational(t) * power_of_two(place);
}

float window_sum(const std::vector<Rational>& terms) {
    std::optional<int> high;
    for (const Rational& t : terms)
        if (t != 0) {
            const int h = floor_log2(t) + 1;
            if (!high || h > *high) high = h;
        }
    if (!high) return 0.0f;
    const int low = *high - 64;
    Rational sum = 0;
    for (const Rational& t : terms)
        sum += truncate(t, low);
    if (sum == 0) return 0.0f;
    return round_to_f32(sum);
}

} // namespace cardsim::numerics::spec
