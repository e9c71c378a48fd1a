// Lowering of the Gated-DeltaNet mixer: conv, L2 norm, gates, delta step, gated norm (lowering.hpp).

#include "engine/lower/lowering.hpp"

namespace cardsim::lower::detail {

void Lowering::conv(std::size_t i, const Silu* silu) {
    auto& o = std::get<Conv>(g_.ops[i]);
    need_decode_rows(i);
    auto& window = std::get<ConvWindow>(g_.states[o.window.id]);
    put<slots::Conv>(i,
                     {.x = on(arena(o.x)),
                      .w = on(raw_weight(o.w, window.channels * window.kernel)),
                      .window = on(out_.states[o.window.id]),
                      .out = on(arena(silu ? silu->out : o.out)),
                      .positions = start_positions_operand(),
                      .slots = slots_operand()},
                     {.rows = rows(o.x), .channels = window.channels, .kernel = window.kernel}, {},
                     silu ? program::flag::FusedSilu : 0);
}

void Lowering::emit_op(std::size_t i, const Conv&) {
    conv(i, nullptr);
}

void Lowering::emit_op(std::size_t i, const L2Norm& o) {
    put<slots::L2Norm>(i, {.x = on(arena(o.x)), .out = on(arena(o.out))},
                       {.rows = rows(o.x), .width = width(o.x), .group = o.group},
                       {.eps = o.eps, .scale = o.scale});
}

void Lowering::emit_op(std::size_t i, const GdnGates& o) {
    std::size_t h = width(o.b);
    put<slots::Gates>(i,
                      {.b = on(arena(o.b)),
                       .a = on(arena(o.a)),
                       .a_log = on(raw_weight(o.a_log, h)),
                       .dt_bias = on(raw_weight(o.dt_bias, h)),
                       .beta = on(arena(o.beta)),
                       .g = on(arena(o.g))},
                      {.rows = rows(o.b), .heads = h});
}

void Lowering::emit_op(std::size_t i, const DeltaStep& o) {
    need_decode_rows(i);
    put<slots::DeltaStep>(
        i,
        {.q = on(arena(o.q)),
         .k = on(arena(o.k)),
         .v = on(arena(o.v)),
         .beta = on(arena(o.beta)),
         .g = on(arena(o.g)),
         .state = on(out_.states[o.state.id]),
         .out = on(arena(o.out)),
         .positions = start_positions_operand(),
         .slots = slots_operand()},
        {.rows = rows(o.q), .key_heads = o.key_heads, .value_heads = o.value_heads, .dk = o.dk, .dv = o.dv});
}

void Lowering::emit_op(std::size_t i, const GatedRmsNorm& o) {
    put<slots::GatedNorm>(i,
                          {.x = on(arena(o.x)),
                           .z = on(arena(o.z)),
                           .w = on(raw_weight(o.w, o.group)),
                           .out = on(arena(o.out))},
                          {.rows = rows(o.x), .width = width(o.x), .group = o.group}, {.eps = o.eps});
}

} // namespace cardsim::lower::detail
