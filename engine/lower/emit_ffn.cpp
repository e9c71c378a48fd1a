// Lowering of the feed-forward activations: SiLU·up, GELU, GeGLU (lowering.hpp).

#include "engine/lower/lowering.hpp"

namespace cardsim::lower::detail {

void Lowering::emit_op(std::size_t i, const SiluMul& o) {
    put<slots::SiluMul>(i, {.gate = on(arena(o.gate)), .up = on(arena(o.up)), .out = on(arena(o.out))},
                        {.rows = rows(o.gate), .width = width(o.gate)});
}

void Lowering::emit_op(std::size_t i, const Gelu& o) {
    unary<slots::Gelu>(i, o.x, o.out, width(o.x));
}

void Lowering::emit_op(std::size_t i, const GeGlu& o) {
    unary<slots::GeGlu>(i, o.x, o.out, width(o.out));
}

} // namespace cardsim::lower::detail
