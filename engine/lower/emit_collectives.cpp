// Lowering of a tensor-parallel card's collectives (lowering.hpp): the ring all-reduce and
// all-gather as the network unit's sends and receives, the add unit's sums and joins, and the DMA's
// copies. Rank k of a group sends to rank k + 1 and receives from rank k − 1 (mod N), in the
// ring's order.

#include "engine/lower/lowering.hpp"

#include "engine/numerics/partial_sum.hpp"

namespace cardsim::lower::detail {
namespace {

/// Bytes `from .. from + bytes` of place `p`.
Place part_of(const Place& p, std::uint64_t from, std::uint64_t bytes) {
    return Place{p.region, p.offset + from, bytes};
}

} // namespace

Lowering::Ring Lowering::ring(std::size_t i, std::size_t cards) const {
    if (!o_.stage || o_.stage->group.size() < 2)
        throw Error(fmt::format("op {} ({}) joins the cards of a tensor-parallel plan, and this lowering is "
                                "for a card in no group",
                                i, kind(g_.ops[i])));
    const auto& group = o_.stage->group;
    const std::size_t n = group.size(), k = o_.stage->rank;
    if (cards != n)
        throw Error(fmt::format("op {} ({}) joins {} cards, and card {}'s group has {}", i, kind(g_.ops[i]),
                                cards, o_.stage->card, n));
    return {k, n, group[(k + 1) % n], group[(k + n - 1) % n]};
}

void Lowering::emit_op(std::size_t i, const Gemm& o) {
    std::size_t k = width(o.a);
    if (o.partial) { // a row-parallel card's exact parts (numerics/partial_sum.hpp)
        const std::size_t n = width(o.out) / graph::partial_words;
        put<slots::Matvec>(i, {.x = on(arena(o.a)), .w = on(matrix(o.w, n, k)), .out = on(arena(o.out))},
                           {.rows = rows(o.a), .n = n, .k = k, .n1 = n, .n2 = 0}, {}, program::flag::Partial);
        return;
    }
    gemm(i, o);
}

void Lowering::emit_op(std::size_t i, const AllReduce& o) {
    const auto [card, N, next, prev] = ring(i, o.cards);
    const std::size_t elements = rows(o.out) * o.width;
    if (elements < N)
        throw Error(fmt::format("op {} (AllReduce): {} values do not make a chunk for each of {} cards", i,
                                elements, N));
    const Place x = arena(o.x), scratch = arena(o.scratch), out = arena(o.out);
    if (o.exchange == Exchange::Exact) {
        // Every card's parts go round the ring whole; each card joins all of them.
        const std::uint64_t bytes = elements * numerics::PARTIAL_BYTES;
        for (std::size_t s = 0; s + 1 < N; ++s) {
            const Place from = s == 0 ? x : part_of(scratch, (s - 1) * bytes, bytes);
            put<slots::Send>(i, {.x = on(from)}, {.peer = next});
            put<slots::Recv>(i, {.out = on(part_of(scratch, s * bytes, bytes))}, {.peer = prev});
        }
        put<slots::SumPartials>(i, {.x = on(x), .others = on(scratch), .out = on(out)},
                                {.elements = elements, .parts = N});
        return;
    }
    // f32: a reduce-scatter (each chunk summed along the ring from the card after its owner, the
    // receive adding as the bytes arrive), then an all-gather of the summed chunks.
    auto chunk = [&, N = N](std::size_t j) { // a binding captured by name (clang before 16)
        const std::size_t from = (j % N) * elements / N, to = (j % N + 1) * elements / N;
        return part_of(x, 4 * from, 4 * (to - from));
    };
    for (std::size_t s = 0; s + 1 < N; ++s) {
        const Place send = chunk(card + N - s), mine = chunk(card + 2 * N - s - 1);
        put<slots::Send>(i, {.x = on(send)}, {.peer = next});
        put<slots::RecvAdd>(i, {.out = on(mine)}, {.peer = prev}); // added as it arrives
    }
    for (std::size_t s = 0; s + 1 < N; ++s) {
        put<slots::Send>(i, {.x = on(chunk(card + 1 + N - s))}, {.peer = next});
        put<slots::Recv>(i, {.out = on(chunk(card + N - s))}, {.peer = prev});
    }
}

void Lowering::emit_op(std::size_t i, const AllGather& o) {
    const auto [card, N, next, prev] = ring(i, o.cards);
    const Place x = arena(o.x), out = arena(o.out);
    const std::size_t r_count = rows(o.x);
    const std::uint64_t row = x.bytes / r_count; // one card's columns of a row
    // Card j's columns of row r in `out`.
    auto place = [&, N = N](std::size_t r, std::size_t j) {
        return part_of(out, (r * N + j % N) * row, row);
    };
    // Step s: send the block of card k − s (this card's own first, then the one received last),
    // then receive card k − s − 1's, a message a row, each straight into its place.
    for (std::size_t s = 0; s + 1 < N; ++s) {
        const std::size_t from = (card + N - s) % N, into = (card + 2 * N - s - 1) % N;
        for (std::size_t r = 0; r < r_count; ++r)
            put<slots::Send>(i, {.x = on(from == card ? part_of(x, r * row, row) : place(r, from))},
                             {.peer = next});
        for (std::size_t r = 0; r < r_count; ++r)
            put<slots::Recv>(i, {.out = on(place(r, into))}, {.peer = prev});
    }
    for (std::size_t r = 0; r < r_count; ++r)
        put<slots::Copy>(i, {.src = on(part_of(x, r * row, row)), .dst = on(place(r, card))}, {});
}

} // namespace cardsim::lower::detail
