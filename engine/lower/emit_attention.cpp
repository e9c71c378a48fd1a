// Lowering of attention: rotary, self attention, cache append, attention over the cache
// (lowering.hpp).

#include "engine/lower/lowering.hpp"

#include "engine/numerics/rotary.hpp"

#include <cstring>

namespace cardsim::lower::detail {

void Lowering::emit_op(std::size_t i, const Rope& o) {
    put<slots::Rope>(i, {.x = on(arena(o.qkv)), .positions = on(out_.io.positions)},
                     {.rows = rows(o.qkv), .heads = o.heads, .head_dim = o.head_dim}, {.theta = o.theta});
}

void Lowering::emit_op(std::size_t i, const Attention& o) {
    put<slots::SelfAttention>(
        i, {.qkv = on(arena(o.qkv)), .seq_starts = on(out_.io.seq_starts), .out = on(arena(o.out))},
        {.rows = rows(o.qkv),
         .seqs = o_.bucket.seqs,
         .heads = o.heads,
         .head_dim = o.head_dim,
         .window = o.window.value_or(0)});
}

void Lowering::emit_op(std::size_t i, const Rotate& o) {
    if (o.interleaved)
        throw Error(fmt::format("op {} (Rotate): interleaved rotary pairs have no command on this card", i));
    if (o.yarn) { // YaRN: the frequency table placed as a constant beside the weights
        const auto& y = *o.yarn;
        const numerics::Yarn yarn{y.factor, y.beta_fast, y.beta_slow, y.original_max, y.truncate};
        const std::size_t half = o.rotary_dim / 2;
        const std::string key = fmt::format("yarn:{}:{}:{}:{}:{}:{}:{}", o.rotary_dim, o.theta, y.factor,
                                            y.beta_fast, y.beta_slow, y.original_max, y.truncate);
        auto it = yarn_tables_.find(key);
        if (it == yarn_tables_.end()) {
            const double theta = o.theta;
            const std::size_t dim = o.rotary_dim;
            it = yarn_tables_
                     .emplace(key, reserve(4 * half, false, key,
                                           [dim, theta, yarn](const Destination& out) {
                                               const auto f = numerics::yarn_frequencies(dim, theta, yarn);
                                               out.put(0, std::as_bytes(std::span(f)).first(out.size()));
                                           }))
                     .first;
        }
        put<slots::RotateScaled>(
            i, {.x = on(arena(o.x)), .positions = on(out_.io.positions), .freqs = on(it->second)},
            {.rows = rows(o.x),
             .heads = width(o.x) / o.head_dim,
             .head_dim = o.head_dim,
             .rotary_dim = o.rotary_dim},
            {.scale = static_cast<double>(static_cast<float>(y.attention_factor))});
        return;
    }
    put<slots::Rotate>(i, {.x = on(arena(o.x)), .positions = on(out_.io.positions)},
                       {.rows = rows(o.x),
                        .heads = width(o.x) / o.head_dim,
                        .head_dim = o.head_dim,
                        .rotary_dim = o.rotary_dim},
                       {.theta = o.theta});
}

void Lowering::emit_op(std::size_t i, const CacheAppend& o) {
    need_decode_rows(i);
    auto [heads, dim] = cache_shape(o.cache);
    put<slots::CacheAppend>(
        i,
        {.x = on(arena(o.x)),
         .positions = on(out_.io.positions),
         .cache = on(out_.states[o.cache.id]),
         .slots = slots_operand()},
        {.rows = rows(o.x), .kv_heads = heads, .head_dim = dim, .max_positions = o_.max_positions});
}

void Lowering::emit_op(std::size_t i, const AttendCache& o) {
    need_decode_rows(i);
    put<slots::Attend>(i,
                       {.q = on(arena(o.q)),
                        .positions = on(out_.io.positions),
                        .keys = on(out_.states[o.keys.id]),
                        .values = on(out_.states[o.values.id]),
                        .sinks = o.sinks ? on(raw_weight(*o.sinks, o.heads)) : absent(),
                        .out = on(arena(o.out)),
                        .slots = slots_operand()},
                       {.rows = rows(o.q),
                        .heads = o.heads,
                        .kv_heads = o.kv_heads,
                        .head_dim = o.head_dim,
                        .max_positions = o_.max_positions,
                        .window = o.window.value_or(0)},
                       {.scale = o.scale, .softcap = o.softcap.value_or(0.0)});
}

std::pair<std::size_t, std::size_t> Lowering::cache_shape(StateId s) const {
    if (auto* k = std::get_if<KeyCache>(&g_.states[s.id])) return {k->kv_heads, k->head_dim};
    auto& v = std::get<ValueCache>(g_.states[s.id]);
    return {v.kv_heads, v.head_dim};
}

} // namespace cardsim::lower::detail
