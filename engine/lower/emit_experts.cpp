// Lowering of a mixture of experts (lowering.hpp): graph::Moe as the card runs it.
//
//   Matvec        x · routerᵀ                      → logits            (matvec unit)
//   Route         top_k of the logits, weights     → experts, weights  (router unit)
//   ExpertMatvec  x · [gate_e; up_e]ᵀ per slot     → gate, up          (matvec unit, indirect)
//   SiluMul       silu(gate) · up                  → act               (rows · top_k rows)
//   ExpertMatvec  act · down_eᵀ per slot           → expert outputs    (matvec unit, indirect)
//   [shared expert: Matvec [gate; up], SiluMul, Matvec down, Matvec of its [1, width] gate]
//   Combine       Σ w · expert outputs (+ sigmoid(gate) · shared) → out  (router unit)
//
// Every intermediate lives in the arena's scratch (graph/moe_scratch.hpp). The experts' weights
// lie in DDR as each expert's packed [gate; up] matrix (2·intermediate × width), all experts of
// the layer one after another, then each expert's packed down matrix; a per-layer expert table
// (one u64 byte offset per expert into those matrices, for the [gate; up] part and for the down
// part) lets the matvec unit resolve the router's indices itself: it reads the chosen indices on
// chip, the chosen experts' table entries from DDR, and streams each chosen expert once
// (sim/units/matvec.cpp; the resolve latency is `units.router.resolve_latency`).

#include "engine/lower/lowering.hpp"

#include "engine/graph/moe_scratch.hpp"

#include <cstring>

namespace cardsim::lower::detail {

Place Lowering::stacked_matrix(const std::vector<Weight>& views, std::size_t k) {
    // Views multiplied as x · W (stored [in, out], gpt-oss's experts) are packed transposed; a stack
    // is all one or all the other.
    std::size_t n = 0;
    const bool copy_transposed = !views.empty() && !transposed(views.front().view);
    for (auto& v : views) {
        auto shape = ws_.view_of(v.tensor, v.view);
        if (!transposed(v.view) != copy_transposed)
            throw Error(fmt::format("tensor {}: a stacked matrix of [out, in] and [in, out] views",
                                    ws_.name(v.tensor)));
        const std::size_t rows = copy_transposed ? shape.row_len : shape.rows,
                          cols = copy_transposed ? shape.rows : shape.row_len;
        if (cols != k)
            throw Error(fmt::format("tensor {}: its view reads {} × {}, expected rows of {}",
                                    ws_.name(v.tensor), rows, cols, k));
        n += rows;
    }
    std::string what;
    for (auto& v : views)
        what += fmt::format("{}:{}+", ws_.name(v.tensor), rows_key(v.view));
    what += fmt::format("stacked:{}x{}", n, k);
    if (copy_transposed) what += "ᵀ";
    const Place all = reserve(t_.storage.packed_bytes(n, k), true, what,
                              [this, views, n, k, copy_transposed](const Destination& out) {
                                  pack(views, copy_transposed, n, k, out);
                              });
    record_stack(views, copy_transposed, all);
    return all;
}

Place Lowering::bias_table(const std::vector<std::vector<Weight>>& per_expert, std::size_t n) {
    std::string what = "expert-biases:";
    for (auto& views : per_expert)
        for (auto& v : views)
            what += fmt::format("{}:{}+", ws_.name(v.tensor), rows_key(v.view));
    return reserve(4 * n * per_expert.size(), false, what, [this, per_expert, n](const Destination& out) {
        std::vector<float> all;
        for (auto& views : per_expert) {
            const std::size_t start = all.size();
            for (auto& v : views) {
                auto values = ws_.values_f32(v.tensor, v.view);
                all.insert(all.end(), values.begin(), values.end());
            }
            if (all.size() - start != n)
                throw Error(
                    fmt::format("an expert's biases hold {} values, its outputs {}", all.size() - start, n));
        }
        if (4 * all.size() != out.size())
            throw Error(fmt::format("expert biases of {} values in {} bytes", all.size(), out.size()));
        out.put(0, std::as_bytes(std::span(all)));
    });
}

Lowering::ExpertTable Lowering::expert_table(const std::vector<std::vector<Weight>>& per_expert,
                                             std::size_t n, std::size_t k) {
    std::vector<Place> places;
    for (auto& views : per_expert) {
        places.push_back(stacked_matrix(views, k));
        if (places.back().bytes != t_.storage.packed_bytes(n, k))
            throw Error(fmt::format("expert {}'s matrices are not {} × {}", places.size() - 1, n, k));
    }
    const Place all{Region::Weights, places.front().offset,
                    places.back().offset + places.back().bytes - places.front().offset};
    std::vector<std::uint64_t> offsets;
    for (auto& p : places)
        offsets.push_back(p.offset - all.offset);
    // Reserved one after another on the stripe: expert e's matrix is e strides in.
    const std::uint64_t stride = places.size() > 1 ? offsets[1] : align_up(places[0].bytes, t_.stripe());
    for (std::size_t e = 0; e < offsets.size(); ++e)
        if (offsets[e] != e * stride) throw Error("the experts' matrices are not one stride apart");
    std::string what = "expert-table:";
    for (auto o : offsets)
        what += fmt::format("{},", o);
    Place table = reserve(8 * offsets.size(), false, what, [offsets](const Destination& out) {
        if (out.size() != 8 * offsets.size())
            throw Error(
                fmt::format("an expert table of {} bytes for {} experts", out.size(), offsets.size()));
        out.put(0, std::as_bytes(std::span(offsets))); // little-endian u64, as the program file
    });
    return {table, all, stride};
}

void Lowering::emit_op(std::size_t i, const Moe& o) {
    // E: the router's experts; this card holds `mine` of them from `first` (all on one card).
    const std::size_t R = rows(o.x), H = width(o.x), E = o.routed(), k = o.top_k, I = o.intermediate;
    const std::size_t mine = o.gate.size(), first = o.first_expert;
    const std::size_t J = o.shared_intermediate;
    if (J > 0 && !o.shared_expert_gate)
        throw Error(fmt::format("op {} (Moe): a shared expert without its sigmoid gate", i));
    const auto s = graph::moe_scratch(o, R, H);
    auto scratch = [&](std::size_t at, std::size_t floats) {
        return on(Place{Region::Arena, 4 * (out_.layout.scratch + at), 4 * floats});
    };
    const std::uint64_t router = routers_++;
    put<slots::Matvec>(i,
                       {.x = on(arena(o.x)),
                        .w = on(matrix(o.router, E, H)),
                        .b = o.router_bias ? on(raw_weight(*o.router_bias, E)) : absent(),
                        .out = scratch(s.logits, R * E)},
                       {.rows = R, .n = E, .k = H, .n1 = E, .n2 = 0});
    put<slots::Route>(
        i,
        {.logits = scratch(s.logits, R * E),
         .experts = scratch(s.experts, R * k),
         .weights = scratch(s.weights, R * k)},
        {.rows = R, .experts = E, .top_k = k, .all = o.norm_topk_prob ? 0u : 1u, .router = router});
    std::vector<std::vector<Weight>> gate_up, down;
    for (std::size_t e = 0; e < mine; ++e) {
        gate_up.push_back({o.gate[e], o.up[e]});
        down.push_back({o.down[e]});
    }
    const auto gu = expert_table(gate_up, 2 * I, H);
    const auto dn = expert_table(down, H, I);
    // gpt-oss: each expert's [gate; up] biases and its down bias, in the table's order.
    program::Operand gu_bias = absent(), dn_bias = absent();
    if (!o.gate_bias.empty()) {
        std::vector<std::vector<Weight>> gub, db;
        for (std::size_t e = 0; e < mine; ++e) {
            gub.push_back({o.gate_bias[e], o.up_bias[e]});
            db.push_back({o.down_bias[e]});
        }
        gu_bias = on(bias_table(gub, 2 * I));
        dn_bias = on(bias_table(db, H));
    }
    put<slots::ExpertMatvec>(i,
                             {.x = on(arena(o.x)),
                              .choice = scratch(s.experts, R * k),
                              .table = on(gu.table),
                              .experts = on(gu.matrices),
                              .out = scratch(s.gate, R * k * I),
                              .out2 = scratch(s.up, R * k * I),
                              .bias = gu_bias},
                             {.rows = R,
                              .top_k = k,
                              .experts = mine,
                              .n = 2 * I,
                              .k = H,
                              .n1 = I,
                              .per_slot = 0,
                              .stride = gu.stride,
                              .router = router,
                              .first = first,
                              .routed = E});
    if (o.swiglu_limit) // gpt-oss's clamped SwiGLU
        put<slots::SwigluClamp>(i,
                                {.gate = scratch(s.gate, R * k * I),
                                 .up = scratch(s.up, R * k * I),
                                 .out = scratch(s.act, R * k * I)},
                                {.rows = R * k, .width = I},
                                {.limit = *o.swiglu_limit, .alpha = o.swiglu_alpha});
    else
        put<slots::SiluMul>(i,
                            {.gate = scratch(s.gate, R * k * I),
                             .up = scratch(s.up, R * k * I),
                             .out = scratch(s.act, R * k * I)},
                            {.rows = R * k, .width = I});
    put<slots::ExpertMatvec>(i,
                             {.x = scratch(s.act, R * k * I),
                              .choice = scratch(s.experts, R * k),
                              .table = on(dn.table),
                              .experts = on(dn.matrices),
                              .out = scratch(s.expert_out, R * k * H),
                              .out2 = absent(),
                              .bias = dn_bias},
                             {.rows = R,
                              .top_k = k,
                              .experts = mine,
                              .n = H,
                              .k = I,
                              .n1 = H,
                              .per_slot = 1,
                              .stride = dn.stride,
                              .router = router,
                              .first = first,
                              .routed = E});
    program::Operand shared = absent(), gate = absent();
    if (J > 0) {
        put<slots::Matvec>(i,
                           {.x = on(arena(o.x)),
                            .w = on(stacked_matrix({*o.shared_gate, *o.shared_up}, H)),
                            .out = scratch(s.shared_gate, R * J),
                            .out2 = scratch(s.shared_up, R * J)},
                           {.rows = R, .n = 2 * J, .k = H, .n1 = J, .n2 = J});
        put<slots::SiluMul>(i,
                            {.gate = scratch(s.shared_gate, R * J),
                             .up = scratch(s.shared_up, R * J),
                             .out = scratch(s.shared_act, R * J)},
                            {.rows = R, .width = J});
        put<slots::Matvec>(i,
                           {.x = scratch(s.shared_act, R * J),
                            .w = on(matrix(*o.shared_down, H, J)),
                            .out = scratch(s.shared_out, R * H)},
                           {.rows = R, .n = H, .k = J, .n1 = H, .n2 = 0});
        put<slots::Matvec>(i,
                           {.x = on(arena(o.x)),
                            .w = on(matrix(*o.shared_expert_gate, 1, H)),
                            .out = scratch(s.shared_logit, R)},
                           {.rows = R, .n = 1, .k = H, .n1 = 1, .n2 = 0});
        shared = scratch(s.shared_out, R * H);
        gate = scratch(s.shared_logit, R);
    }
    put<slots::Combine>(i,
                        {.weights = scratch(s.weights, R * k),
                         .outs = scratch(s.expert_out, R * k * H),
                         .shared = shared,
                         .gate = gate,
                         .out = on(arena(o.out))},
                        {.rows = R, .top_k = k, .width = H}, {}, o.partial ? program::flag::Partial : 0u);
}

} // namespace cardsim::lower::detail
