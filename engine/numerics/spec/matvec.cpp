#include "engine/numerics/spec/matvec.hpp"

#include "engine/numerics/spec/weights.hpp"
#include "engine/numerics/spec/window.hpp"

#include <limits>

namespace cardsim::numerics::spec {

std::vector<float> matvec(std::span<const std::byte> bytes, const MatrixLayout& l,
                          const QuantizedActivation& a) {
    const std::size_t groups = (l.cols + l.format.group - 1) / l.format.group;
    const std::size_t chunks = groups * l.format.group / 32;
    const std::size_t blocks = (a.length + a.block - 1) / a.block;
    std::vector<float> out(l.rows);
    bool activation_nan = false;
    for (auto s : a.states)
        activation_nan = activation_nan || s == BlockState::NonFinite;
    for (std::size_t r = 0; r < l.rows; ++r) {
        bool nan = activation_nan;
        std::vector<std::optional<Rational>> scales;
        for (std::size_t g = 0; g < groups; ++g) {
            scales.push_back(weight_scale(bytes, l, r, g));
            if (!scales.back()) nan = true;
        }
        if (nan) {
            out[r] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        std::vector<Rational> terms;
        for (std::size_t i = 0; i < chunks; ++i)
            for (int w = 0; w < a.words; ++w) {
                Integer d = 0;
                for (std::size_t c = 32 * i; c < 32 * i + 32; ++c) {
                    const Integer act = c < a.length ? Integer(a.codes[w * a.length + c]) : Integer(0);
                    d += Integer(weight_code(bytes, l, r, c)) * act;
                }
                const int e = 32 * i < a.length ? a.exponents[w * blocks + (32 * i) / a.block] : 0;
                terms.push_back(Rational(d) * *scales[(32 * i) / l.format.group] * power_of_two(e));
            }
        out[r] = window_sum(terms);
    }
    return out;
}

} // namespace cardsim::numerics::spec
