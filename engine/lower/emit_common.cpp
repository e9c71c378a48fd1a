// Lowering of the ops every family uses: matvecs (merged ones too), norms, elementwise (lowering.hpp).

#include "engine/lower/lowering.hpp"

#include "engine/program/epilogue.hpp"

namespace cardsim::lower::detail {

void Lowering::gemm(std::size_t i, const Gemm& o) {
    std::size_t n = width(o.out), k = width(o.a);
    put<slots::Matvec>(i,
                       {.x = on(arena(o.a)),
                        .w = on(matrix(o.w, n, k)),
                        .b = o.b ? on(raw_weight(*o.b, n)) : absent(),
                        .out = on(arena(o.out))},
                       {.rows = rows(o.a), .n = n, .k = k, .n1 = n, .n2 = 0}, {},
                       program::epilogue_flags(o.epilogue));
}

void Lowering::merged_matvec(const shim::Group& grp) {
    auto& first = std::get<Gemm>(g_.ops[grp.ops.front()]);
    std::size_t k = width(first.a), n = 0;
    std::vector<std::size_t> parts;
    std::vector<Weight> views;
    for (auto i : grp.ops) {
        auto& m = std::get<Gemm>(g_.ops[i]);
        auto shape = ws_.view_of(m.w.tensor, m.w.view);
        if (shape.rows != width(m.out) || shape.row_len != k)
            throw Error(fmt::format("tensor {}: its view reads {} × {}, op {} needs {} × {}",
                                    ws_.name(m.w.tensor), shape.rows, shape.row_len, i, width(m.out), k));
        views.push_back(m.w);
        parts.push_back(width(m.out));
        n += width(m.out);
    }
    if (parts.size() > 3) throw Error("a merged matvec writes at most three values");
    std::string what;
    for (auto& v : views)
        what += fmt::format("{}:{}+", ws_.name(v.tensor), rows_key(v.view));
    what += fmt::format("merged:{}x{}", n, k);
    auto w = reserve(t_.storage.packed_bytes(n, k), true, what,
                     [this, views, n, k](const Destination& out) { pack(views, false, n, k, out); });
    record_stack(views, false, w);
    auto part = [&](std::size_t p) {
        return p < grp.ops.size() ? on(arena(std::get<Gemm>(g_.ops[grp.ops[p]]).out)) : absent();
    };
    put<slots::Matvec>(
        grp.ops.front(),
        {.x = on(arena(first.a)), .w = on(w), .out = part(0), .out2 = part(1), .out3 = part(2)},
        {.rows = rows(first.a), .n = n, .k = k, .n1 = parts[0], .n2 = parts.size() > 1 ? parts[1] : 0});
}

void Lowering::emit_op(std::size_t i, const LayerNorm& o) {
    put<slots::LayerNorm>(i,
                          {.x = on(arena(o.x)),
                           .w = on(raw_weight(o.w, width(o.x))),
                           .b = o.b ? on(raw_weight(*o.b, width(o.x))) : absent(),
                           .out = on(arena(o.out))},
                          {.rows = rows(o.x), .width = width(o.x)}, {.eps = o.eps});
}

void Lowering::emit_op(std::size_t i, const RmsNorm& o) {
    put<slots::RmsNorm>(
        i,
        {.x = on(arena(o.x)), .w = o.w ? on(raw_weight(*o.w, o.group)) : absent(), .out = on(arena(o.out))},
        {.rows = rows(o.x), .width = width(o.x), .group = o.group}, {.eps = o.eps},
        o.zero_centred ? program::flag::ZeroCentred : 0);
}

void Lowering::emit_op(std::size_t i, const Add& o) {
    put<slots::Add>(i, {.a = on(arena(o.a)), .b = on(arena(o.b)), .out = on(arena(o.out))},
                    {.rows = rows(o.a), .width = width(o.a)});
}

void Lowering::emit_op(std::size_t i, const Silu& o) {
    unary<slots::Silu>(i, o.x, o.out, width(o.x));
}

void Lowering::emit_op(std::size_t i, const SigmoidGate& o) {
    put<slots::SigmoidGate>(i, {.x = on(arena(o.x)), .gate = on(arena(o.gate)), .out = on(arena(o.out))},
                            {.rows = rows(o.x), .width = width(o.x)});
}

} // namespace cardsim::lower::detail
