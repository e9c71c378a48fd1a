// The decoder reference's dense MLP (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include <cmath>
#include <numbers>

namespace cardsim::models::reference::decoder {

void load_mlp(const Checkpoint& c, const std::string& p, Layer& l) {
    l.gate = linear(c, p + "mlp.gate_proj");
    l.up = linear(c, p + "mlp.up_proj");
    l.down = linear(c, p + "mlp.down_proj");
}

Rows swiglu(const Linear& gate, const Linear& up, const Linear& down, const Rows& x) {
    Rows g = gate(x);
    const Rows u = up(x);
    for (std::size_t t = 0; t < g.size(); ++t)
        for (std::size_t i = 0; i < g[t].size(); ++i)
            g[t][i] = silu(g[t][i]) * u[t][i];
    return down(g);
}

Rows mlp(const Weights& W, const Layer& l, const Rows& x) {
    if (W.act == Weights::Act::Silu) return swiglu(l.gate, l.up, l.down, x);
    Rows g = l.gate(x);
    const Rows u = l.up(x);
    const double k = std::sqrt(2.0 / std::numbers::pi);
    for (std::size_t t = 0; t < g.size(); ++t)
        for (std::size_t i = 0; i < g[t].size(); ++i) {
            const double v = g[t][i];
            const double act = W.act == Weights::Act::Gelu
                                   ? gelu(v)
                                   : 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
            g[t][i] = act * u[t][i];
        }
    return l.down(g);
}

} // namespace cardsim::models::reference::decoder
