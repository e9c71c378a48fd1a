#include "engine/numerics/scheme.hpp"

#include <algorithm>

namespace cardsim::numerics {

int max_code(const Scale& s) {
    if (auto* p = std::get_if<LeastPowerOfTwo>(&s)) return (1 << p->significand_bits) - 1;
    return 255;
}

bool is_unsigned(const Scale& s) {
    return std::holds_alternative<LeastPowerOfTwoOver255>(s);
}

std::size_t block_size(const Block& block, std::size_t length, std::size_t weights_group) {
    if (auto* v = std::get_if<Values>(&block)) return v->n;
    if (std::holds_alternative<OfTheWeights>(block)) return weights_group;
    return std::max<std::size_t>(length, 1);
}

std::string to_string(const Block& b) {
    if (auto* v = std::get_if<Values>(&b)) return "Values(" + std::to_string(v->n) + ")";
    if (std::holds_alternative<OfTheWeights>(b)) return "OfTheWeights";
    return "Row";
}

std::string to_string(const Scale& s) {
    if (auto* p = std::get_if<LeastPowerOfTwo>(&s))
        return "LeastPowerOfTwo { significand_bits: " + std::to_string(p->significand_bits) + " }";
    return "LeastPowerOfTwoOver255";
}

std::string to_string(const Scheme& s) {
    return "Scheme { block: " + to_string(s.block) + ", scale: " + to_string(s.scale) +
           ", words: " + std::to_string(s.words) + " }";
}

} // namespace cardsim::numerics
