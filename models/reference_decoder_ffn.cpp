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

Vec swiglu(const Linear& gate, const Linear& up, const Linear& down, const Vec& x) {
    Vec g = gate(x);
    const Vec u = up(x);
    for (std::size_t i = 0; i < g.size(); ++i)
        g[i] = silu(g[i]) * u[i];
    return down(g);
}

Vec mlp(const Weights& W, const Layer& l, const Vec& x) {
    if (W.act == Weights::Act::Silu) return swiglu(l.gate, l.up, l.down, x);
    Vec g = l.gate(x);
    const Vec u = l.up(x);
    const double k = std::sqrt(2.0 / std::numbers::pi);
    for (std::size_t i = 0; i < g.size(); ++i) {
        const double v = g[i];
        const double act = W.act == Weights::Act::Gelu
                               ? gelu(v)
                               : 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
        g[i] = act * u[i];
    }
    return l.down(g);
}

} // namespace cardsim::models::reference::decoder
