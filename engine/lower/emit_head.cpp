// Lowering of the embedding, the arg-max and the encoder's heads (lowering.hpp).

#include "engine/lower/lowering.hpp"

namespace cardsim::lower::detail {

void Lowering::emit_op(std::size_t i, const Embed& o) {
    auto shape = ws_.view_of(o.table.tensor, o.table.view);
    put<slots::Embed>(i,
                      {.table = on(matrix(Weight{o.table.tensor, Whole{true}}, shape.rows, width(o.out))),
                       .ids = on(out_.io.ids),
                       .out = on(arena(o.out))},
                      {.rows = rows(o.out), .width = width(o.out)});
}

void Lowering::emit_op(std::size_t i, const ArgMax& o) {
    unary<slots::ArgMax>(i, o.x, o.out, width(o.x));
}

void Lowering::emit_op(std::size_t i, const AddType& o) {
    auto shape = ws_.view_of(o.table.tensor, o.table.view);
    put<slots::AddType>(i,
                        {.h = on(arena(o.h)),
                         .table = on(raw_weight(o.table, shape.numel())),
                         .qtype = on(out_.io.qtype),
                         .seq_starts = on(out_.io.seq_starts)},
                        {.rows = rows(o.h), .seqs = o_.bucket.seqs, .width = width(o.h)});
}

void Lowering::emit_op(std::size_t i, const GatherMarkers& o) {
    put<slots::GatherMarkers>(
        i, {.h = on(arena(o.h)), .marker_rows = on(out_.io.marker_rows), .out = on(arena(o.out))},
        {.markers = rows(o.out), .width = width(o.out)});
}

void Lowering::emit_op(std::size_t i, const ActFeatures& o) {
    put<slots::ActFeatures>(i,
                            {.h = on(arena(o.h)),
                             .logits = on(arena(o.logits)),
                             .seq_starts = on(out_.io.seq_starts),
                             .marker_starts = on(out_.io.marker_starts),
                             .out = on(arena(o.out))},
                            {.seqs = o_.bucket.seqs, .markers = o_.bucket.markers, .width = width(o.h)});
}

} // namespace cardsim::lower::detail
