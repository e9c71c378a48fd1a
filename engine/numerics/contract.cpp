#include "engine/numerics/contract.hpp"

#include "engine/numerics/attention.hpp"
#include "engine/numerics/exact_sum.hpp"

#include <fmt/core.h>

namespace cardsim::numerics {

Contract contract(const EngineNumerics& n) {
    Contract c;
    c.point = "the engine: " + to_string(n);
    const bool sub32 = n.scaling == ActScaling::Sub32;
    const Scheme activations{sub32 ? Block{Values{ACT_BLOCK}} : Block{OfTheWeights{}},
                             LeastPowerOfTwo{sub32 ? NARROW_BITS : WIDE_BITS},
                             n.activations == Words::One ? 1 : 2};
    c.activations = activations;
    c.state = n.state == StateFormat::F32 ? Keep::F32 : Keep::F16;
    switch (n.cache) {
    case CacheFormat::F16:
        c.cache = Keep::F16;
        break;
    case CacheFormat::Int8:
        c.cache = Keep::Int8Rows;
        break;
    case CacheFormat::Int8Hadamard:
        c.cache = Keep::Int8RowsRotated;
        break;
    }
    if (n.attention == AttentionMath::Array) {
        Scheme queries = activations;
        if (std::holds_alternative<OfTheWeights>(queries.block)) queries.block = Row{};
        c.attention = AttentionNumerics{Quantized{queries}, Kept{c.cache}, Quantized{weight_scheme}};
    }
    c.fused = EXACT;
    c.accumulator_bits = WINDOW_PLACES;
    return c;
}

namespace {

/// The router's and the expert combine's rules (router.hpp, combine.hpp): the same at every point.
std::string router_text() {
    return "  router:           the top k of the f32 logits z, larger first, ties to the lower expert index "
           "(-0 = +0)\n"
           "                    p_e = exp(z_e - z_top): one f32 subtraction, exp correctly rounded\n"
           "                    topk: w_i = p_i / S, S = window sum of the k chosen p, rounded once\n"
           "                    all:  w_i = p_i / Z, Z = window sum of all E p, rounded once (norm_topk_prob "
           "false)\n"
           "                    a NaN or infinite logit: experts 0 .. k-1, every weight NaN\n"
           "                    each weight within (ln N + 5) x 2^-24 of the exact softmax (N = k or E)\n"
           "  expert combine:   y_c = window sum of the exact products w_i x e_ic and sigmoid(gate) x s_c, "
           "rounded once\n";
}

} // namespace

std::string to_string(const Taken& t) {
    if (auto* q = std::get_if<Quantized>(&t)) return "Quantized(" + to_string(q->scheme) + ")";
    return "Kept(" + std::string(name(std::get<Kept>(t).keep)) + ")";
}

std::string to_string(const Contract& c) {
    std::string s = "numerics contract of " + c.point + "\n";
    s += fmt::format("  activations:      {}\n", c.activations ? to_string(*c.activations) : "none");
    s += fmt::format("  cache:            {}\n", name(c.cache));
    s += fmt::format("  state:            {}\n", name(c.state));
    if (!c.attention) {
        s += "  attention:        vector (f32 scores, weights and values; sums exact in the window)\n";
    } else {
        s += "  attention:        array\n";
        s += fmt::format("    queries:        {}\n", to_string(c.attention->queries));
        s += fmt::format("    keys/values:    {}\n", to_string(c.attention->keys_values));
        s += fmt::format("    weights:        {}\n", to_string(c.attention->weights));
    }
    s += c.fused == EXACT ? std::string("  fused:            exact\n")
                          : fmt::format("  fused:            within {} ulps\n", c.fused.ulps);
    s += fmt::format("  accumulator bits: {} (a {}-bit register)\n", c.accumulator_bits, ACCUMULATOR_BITS);
    s += router_text();
    return s;
}

} // namespace cardsim::numerics
