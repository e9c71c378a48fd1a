#include "engine/graph/moe_scratch.hpp"

#include "engine/graph/layout.hpp"

#include <algorithm>

namespace cardsim::graph {

MoeScratch moe_scratch(const Moe& o, std::size_t rows, std::size_t width) {
    MoeScratch s;
    auto part = [&](std::size_t& at, std::size_t n) {
        at = s.len;
        s.len += (n + ALIGN - 1) / ALIGN * ALIGN;
    };
    const std::size_t E = o.routed(), k = o.top_k, I = o.intermediate, J = o.shared_intermediate;
    part(s.logits, rows * E);
    part(s.experts, rows * k);
    part(s.weights, rows * k);
    part(s.gate, rows * k * I);
    part(s.up, rows * k * I);
    part(s.act, rows * k * I);
    part(s.expert_out, rows * k * width);
    if (J > 0) {
        part(s.shared_gate, rows * J);
        part(s.shared_up, rows * J);
        part(s.shared_act, rows * J);
        part(s.shared_out, rows * width);
        part(s.shared_logit, rows);
    }
    return s;
}

std::size_t scratch_len(const Graph& g, const Bucket& b) {
    std::size_t len = 0;
    for (const auto& op : g.ops)
        if (const auto* m = std::get_if<Moe>(&op)) {
            const auto& x = g.shape(m->x);
            len = std::max(len, moe_scratch(*m, b.rows(x.rows), x.width).len);
        }
    return len;
}

} // namespace cardsim::graph
