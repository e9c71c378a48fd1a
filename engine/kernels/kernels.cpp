#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/kernels/kernels.hpp"

#include "engine/kernels/parallel.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/numerics/attention.hpp"
#include "engine/numerics/conv.hpp"
#include "engine/numerics/elementwise.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/gated_deltanet.hpp"
#include "engine/numerics/keep.hpp"
#include "engine/numerics/matvec.hpp"
#include "engine/numerics/norms.hpp"
#include "engine/numerics/rotary.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace cardsim::kernels {
namespace {

constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

/// A NaN result is the quiet NaN 0x7FC00000 (the card writes no other).
float canonical(float v) {
    return std::isnan(v) ? qnan : v;
}

/// The bytes of row `r`'s sequence in a per-sequence store (`store_of_row`).
template <class Byte>
std::span<Byte> of_sequence(std::span<Byte> all, std::size_t per_seq, std::size_t rows, std::size_t r,
                            std::span<const std::uint32_t> slots) {
    auto at = store_of_row(all.size(), per_seq, rows, slots, r);
    return all.subspan(at.offset, at.bytes);
}

std::size_t rows_of(std::size_t size, std::size_t width) {
    return width ? size / width : 0;
}

/// The first `n` values of `x`, which must hold at least that many (an operand named `what`).
template <class T>
std::span<T> first(std::span<T> x, std::size_t n, const char* unit, const char* what) {
    if (x.size() < n)
        throw Error(fmt::format("{}: the {} holds {} values, {} are needed", unit, what, x.size(), n));
    return x.first(n);
}

/// The whole `width` rows of `x` (values past the last whole row are not an operand's).
std::span<const float> whole_rows(std::span<const float> x, std::size_t width) {
    return x.first(rows_of(x.size(), width) * width);
}

/// The f32 of a double parameter (eps, scales): the units take f32 constants.
float f32(double v) {
    return static_cast<float>(v);
}

} // namespace

void embed(const numerics::MatrixView& table, std::span<const std::uint32_t> ids, std::span<float> out) {
    const std::size_t width = table.layout().cols;
    for (std::size_t r = 0; r < ids.size() && (r + 1) * width <= out.size(); ++r) {
        if (ids[r] >= table.layout().rows)
            throw Error(fmt::format("embed: token id {} of row {} is past the table's {} rows", ids[r], r,
                                    table.layout().rows));
        auto row = table.dequantize_row(ids[r]);
        std::copy(row.begin(), row.end(), out.begin() + r * width);
    }
}

void rms_norm(std::span<const float> x, std::span<const float> w, std::size_t group, double eps,
              bool zero_centred, std::span<float> out) {
    if (group == 0) throw Error("RMSNorm: groups of 0 values");
    // No weight: weights of ones, applied plainly ((x r) · 1 is x r exactly).
    std::vector<float> ones;
    std::span<const float> weights;
    if (w.empty()) {
        ones.assign(group, 1.0f);
        weights = ones;
    } else {
        weights = first(w, group, "RMSNorm", "weight");
    }
    auto xs = whole_rows(x, group);
    numerics::rms_norm(xs, weights, f32(eps),
                       zero_centred && !w.empty() ? numerics::NormWeight::ZeroCentred
                                                  : numerics::NormWeight::Plain,
                       first(out, xs.size(), "RMSNorm", "output"));
}

void layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                std::size_t width, double eps, std::span<float> out) {
    if (width == 0) throw Error("LayerNorm: rows of 0 values");
    auto weights = first(w, width, "LayerNorm", "weight");
    auto bias = b.empty() ? b : first(b, width, "LayerNorm", "bias");
    const std::size_t rows = rows_of(x.size(), width);
    first(out, rows * width, "LayerNorm", "output");
    for (std::size_t r = 0; r < rows; ++r)
        numerics::layer_norm(x.subspan(r * width, width), weights, bias, f32(eps),
                             out.subspan(r * width, width));
}

void matvec(const numerics::MatrixView& w, std::span<const float> x, const numerics::Scheme& scheme,
            graph::Epilogue epilogue, std::span<const float> bias, std::span<float> out) {
    const std::size_t n = w.layout().rows, k = w.layout().cols;
    if (!bias.empty()) bias = first(bias, n, "matvec", "bias");
    std::vector<float> y(n);
    for (std::size_t r = 0; r < rows_of(x.size(), k); ++r) {
        const auto a = numerics::prepare(
            numerics::quantize(x.subspan(r * k, k), scheme, w.layout().format.group), w.layout());
        // Output rows are independent: split them over the host's cores (at least 64 K MACs each).
        parallel_for(n, std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(k, 1)),
                     [&](std::size_t begin, std::size_t end) {
                         numerics::matvec(w, a, std::span<float>(y).subspan(begin, end - begin), begin);
                     });
        if (!bias.empty())
            for (std::size_t i = 0; i < n; ++i)
                y[i] = canonical(y[i] + bias[i]);
        auto o = out.subspan(r * n, n);
        for (std::size_t i = 0; i < n; ++i) {
            switch (epilogue) {
            case graph::Epilogue::None:
                o[i] = y[i];
                break;
            case graph::Epilogue::Accumulate:
                o[i] = canonical(o[i] + y[i]);
                break;
            case graph::Epilogue::Gelu:
                o[i] = numerics::gelu(y[i]);
                break;
            case graph::Epilogue::Relu: // a NaN stays NaN
                o[i] = std::isnan(y[i]) ? qnan : y[i] > 0 ? y[i] : 0.0f;
                break;
            }
        }
    }
}

void matvec_partial(const numerics::MatrixView& w, std::span<const float> x, const numerics::Scheme& scheme,
                    std::span<std::byte> out) {
    const std::size_t n = w.layout().rows, k = w.layout().cols, rows = rows_of(x.size(), k);
    if (out.size() != rows * n * numerics::PARTIAL_BYTES)
        throw Error(fmt::format("partial matvec: {} bytes for {} rows of {} parts", out.size(), rows, n));
    std::vector<numerics::PartialSum> y(n);
    for (std::size_t r = 0; r < rows; ++r) {
        const auto a = numerics::prepare(
            numerics::quantize(x.subspan(r * k, k), scheme, w.layout().format.group), w.layout());
        parallel_for(n, std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(k, 1)),
                     [&](std::size_t begin, std::size_t end) {
                         numerics::matvec_partial(w, a, std::span(y).subspan(begin, end - begin), begin);
                     });
        for (std::size_t i = 0; i < n; ++i)
            numerics::encode(
                y[i], out.subspan((r * n + i) * numerics::PARTIAL_BYTES).first<numerics::PARTIAL_BYTES>());
    }
}

void sum_partials(std::span<const std::byte> mine, std::span<const std::byte> others, std::size_t parts,
                  std::span<float> out) {
    const std::size_t e = out.size(), b = numerics::PARTIAL_BYTES;
    if (parts < 2 || mine.size() != e * b || others.size() != (parts - 1) * e * b)
        throw Error(fmt::format("sum of partials: {} and {} bytes of parts of {} cards for {} values",
                                mine.size(), others.size(), parts, e));
    std::vector<numerics::PartialSum> row(parts);
    for (std::size_t i = 0; i < e; ++i) {
        row[0] = numerics::decode_partial(mine.subspan(i * b).first<numerics::PARTIAL_BYTES>());
        for (std::size_t p = 1; p < parts; ++p)
            row[p] = numerics::decode_partial(
                others.subspan(((p - 1) * e + i) * b).first<numerics::PARTIAL_BYTES>());
        out[i] = numerics::join(row);
    }
}

void rotate(std::span<float> x, std::size_t width, std::size_t head_dim, std::size_t rotary_dim, double theta,
            std::span<const std::uint32_t> positions) {
    const std::size_t rows = rows_of(x.size(), width);
    first(positions, rows, "rotation", "position list");
    for (std::size_t r = 0; r < rows; ++r)
        numerics::rotate(x.subspan(r * width, width), head_dim, rotary_dim, theta, positions[r]);
}

void rotate_scaled(std::span<float> x, std::size_t width, std::size_t head_dim, std::size_t rotary_dim,
                   std::span<const float> freqs, float scale, std::span<const std::uint32_t> positions) {
    const std::size_t rows = rows_of(x.size(), width);
    first(positions, rows, "scaled rotation", "position list");
    for (std::size_t r = 0; r < rows; ++r)
        numerics::rotate_scaled(x.subspan(r * width, width), head_dim, rotary_dim, freqs, scale,
                                positions[r]);
}

SequenceSpan sequence_of_row(std::size_t total, std::size_t per_seq, std::size_t rows, std::size_t r) {
    if (per_seq == 0 || rows == 0) return {};
    const std::size_t lined = (per_seq + sequence_line - 1) / sequence_line * sequence_line;
    const std::size_t stride = total % lined == 0 ? lined : per_seq, seqs = total / stride;
    if (seqs == 0 || rows % seqs != 0)
        throw Error(
            fmt::format("a store of {} bytes holds {} sequences of {} bytes, and {} rows do not divide "
                        "over them",
                        total, seqs, per_seq, rows));
    return {r / (rows / seqs) * stride, stride};
}

SequenceSpan store_of_row(std::size_t total, std::size_t per_seq, std::size_t rows,
                          std::span<const std::uint32_t> slots, std::size_t r) {
    if (slots.empty()) return sequence_of_row(total, per_seq, rows, r);
    if (per_seq == 0) return {};
    if (slots.size() < rows)
        throw Error(fmt::format("{} slots are given for {} rows, one per row is needed", slots.size(), rows));
    const std::size_t lined = (per_seq + sequence_line - 1) / sequence_line * sequence_line;
    const std::size_t stride = total % lined == 0 ? lined : per_seq, seqs = total / stride;
    if (slots[r] >= seqs)
        throw Error(fmt::format("row {} names slot {}, and the store holds {} slots (0 .. {})", r, slots[r],
                                seqs, seqs ? seqs - 1 : 0));
    return {slots[r] * stride, stride};
}

void cache_append(std::span<const float> x, std::size_t kv_heads, std::size_t head_dim,
                  std::size_t max_positions, numerics::CacheFormat f,
                  std::span<const std::uint32_t> positions, std::span<std::byte> cache,
                  std::span<const std::uint32_t> slots) {
    const std::size_t width = kv_heads * head_dim, rows = rows_of(x.size(), width),
                      row_bytes = cache_row_bytes(f, head_dim);
    for (std::size_t r = 0; r < rows; ++r) {
        if (positions[r] >= max_positions)
            throw Error(
                fmt::format("cache append: position {} of sequence {} is past the cache's {} positions",
                            positions[r], r, max_positions));
        auto seq = of_sequence(cache, kv_heads * max_positions * row_bytes, rows, r, slots);
        for (std::size_t h = 0; h < kv_heads; ++h)
            encode_cache_row(f, x.subspan(r * width + h * head_dim, head_dim),
                             seq.subspan((h * max_positions + positions[r]) * row_bytes, row_bytes));
    }
}

void attend(std::span<const float> q, std::size_t heads, std::size_t kv_heads, std::size_t head_dim,
            std::size_t max_positions, std::size_t window, double scale, double softcap,
            std::span<const float> sinks, numerics::CacheFormat f, numerics::AttentionMath math,
            const numerics::Scheme& query_scheme, std::span<const std::uint32_t> positions,
            std::span<const std::byte> keys, std::span<const std::byte> values, std::span<float> out,
            std::span<const std::uint32_t> slots) {
    if (softcap > 0) throw Error("attend: the attention unit takes no soft cap");
    if (!sinks.empty() && sinks.size() != heads)
        throw Error(fmt::format("attend: {} sinks for {} heads", sinks.size(), heads));
    const std::size_t width = heads * head_dim, rows = rows_of(q.size(), width), group = heads / kv_heads;
    const std::size_t row_bytes = cache_row_bytes(f, head_dim);
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t last = positions[r], first = window && last + 1 > window ? last + 1 - window : 0;
        if (last >= max_positions) throw Error(fmt::format("attend: position {} is past the cache", last));
        const std::size_t per_seq = kv_heads * max_positions * row_bytes;
        auto ks = of_sequence(keys, per_seq, rows, r, slots),
             vs = of_sequence(values, per_seq, rows, r, slots);
        const std::size_t n = last - first + 1;
        // Heads are independent: split them over the host's cores when each holds enough work.
        parallel_for(
            heads, std::max<std::size_t>(1, 4096 / (n * head_dim)), [&](std::size_t h0, std::size_t h1) {
                for (std::size_t h = h0; h < h1; ++h) {
                    std::size_t kvh = h / group, at = (kvh * max_positions + first) * row_bytes;
                    numerics::CacheView view{keep_of(f), head_dim, n, ks.subspan(at, n * row_bytes),
                                             vs.subspan(at, n * row_bytes)};
                    auto qh = q.subspan(r * width + h * head_dim, head_dim);
                    auto oh = out.subspan(r * width + h * head_dim, head_dim);
                    const auto sink = sinks.empty() ? std::nullopt : std::optional<float>(sinks[h]);
                    if (math == numerics::AttentionMath::Array)
                        numerics::attend_array(qh, view, static_cast<float>(scale), query_scheme, oh, sink);
                    else
                        numerics::attend_vector(qh, view, static_cast<float>(scale), oh, sink);
                }
            });
    }
}

void self_attention(std::span<const float> qkv, std::size_t heads, std::size_t head_dim, std::size_t window,
                    std::span<const std::uint32_t> seq_starts, std::span<float> out) {
    const std::size_t width = heads * head_dim, fused = 3 * width, row_bytes = 4 * head_dim;
    const float scale = numerics::rsqrt(static_cast<float>(head_dim));
    for (std::size_t s = 0; s + 1 < seq_starts.size(); ++s) {
        const std::size_t begin = seq_starts[s], end = seq_starts[s + 1], len = end > begin ? end - begin : 0;
        if (len == 0) continue;
        if (end * fused > qkv.size() || end * width > out.size())
            throw Error(fmt::format("self attention: sequence {} ends at row {}, past the rows", s, end));
        // Heads are independent: split them over the host's cores when each holds enough work.
        parallel_for(heads, std::max<std::size_t>(1, 4096 / (len * len * head_dim)),
                     [&](std::size_t h0, std::size_t h1) {
                         std::vector<std::byte> keys(len * row_bytes), values(len * row_bytes);
                         for (std::size_t h = h0; h < h1; ++h) {
                             // The sequence's key and value rows of this head, kept as F32 (their own bytes).
                             for (std::size_t j = 0; j < len; ++j) {
                                 std::memcpy(keys.data() + j * row_bytes,
                                             &qkv[(begin + j) * fused + width + h * head_dim], row_bytes);
                                 std::memcpy(values.data() + j * row_bytes,
                                             &qkv[(begin + j) * fused + 2 * width + h * head_dim], row_bytes);
                             }
                             for (std::size_t t = 0; t < len; ++t) {
                                 // Keys at most `window` away on either side.
                                 const std::size_t lo = window && t > window ? t - window : 0,
                                                   hi = window ? std::min(len, t + window + 1) : len;
                                 numerics::CacheView view{numerics::Keep::F32, head_dim, hi - lo,
                                                          std::span<const std::byte>(keys).subspan(
                                                              lo * row_bytes, (hi - lo) * row_bytes),
                                                          std::span<const std::byte>(values).subspan(
                                                              lo * row_bytes, (hi - lo) * row_bytes)};
                                 numerics::attend_vector(
                                     qkv.subspan((begin + t) * fused + h * head_dim, head_dim), view, scale,
                                     out.subspan((begin + t) * width + h * head_dim, head_dim));
                             }
                         }
                     });
    }
}

namespace {

/// Whether row `r` starts its sequence (given `positions`: it stands at position 0), so its store
/// is read as zeros (the zero bytes every store starts from).
bool starts_sequence(std::span<const std::uint32_t> positions, std::size_t r) {
    return !positions.empty() && positions[r] == 0;
}

/// `positions`, when given, has one per row.
void starts_fit(std::span<const std::uint32_t> positions, std::size_t rows, std::string_view what) {
    if (!positions.empty() && positions.size() < rows)
        throw Error(fmt::format("{}: {} positions for {} rows", what, positions.size(), rows));
}

} // namespace

void conv(std::span<const float> x, std::span<const float> w, std::size_t channels, std::size_t kernel,
          bool silu_after, std::span<std::byte> window, std::span<float> out,
          std::span<const std::uint32_t> slots, std::span<const std::uint32_t> positions) {
    if (kernel == 0) throw Error("conv: a kernel of 0 taps");
    const std::size_t rows = rows_of(x.size(), channels), keep_bytes = 4 * (kernel - 1) * channels;
    auto weights = first(w, channels * kernel, "conv", "weight");
    first(out, rows * channels, "conv", "output");
    starts_fit(positions, rows, "conv");
    numerics::ConvState state(channels, kernel);
    for (std::size_t r = 0; r < rows; ++r) {
        // The sequence's window is f32 bytes, oldest input first: the layout of ConvState.
        auto win = of_sequence(window, keep_bytes, rows, r, slots);
        if (win.size() < keep_bytes)
            throw Error(fmt::format("conv: the window of sequence {} holds {} bytes, {} are needed", r,
                                    win.size(), keep_bytes));
        if (starts_sequence(positions, r)) std::fill_n(win.data(), keep_bytes, std::byte{0});
        if (keep_bytes) std::memcpy(state.window.data(), win.data(), keep_bytes);
        auto xr = x.subspan(r * channels, channels);
        auto yr = out.subspan(r * channels, channels);
        if (silu_after)
            numerics::conv_silu_step(xr, weights, {}, state, yr);
        else
            numerics::conv_step(xr, weights, {}, state, yr);
        if (keep_bytes) std::memcpy(win.data(), state.window.data(), keep_bytes);
    }
}

void silu(std::span<const float> x, std::span<float> out) {
    first(out, x.size(), "SiLU", "output");
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = numerics::silu(x[i]);
}

void l2_norm(std::span<const float> x, std::size_t group, double eps, double scale, std::span<float> out) {
    auto xs = whole_rows(x, group);
    numerics::l2_norm(xs, group, f32(eps), f32(scale), first(out, xs.size(), "L2 norm", "output"));
}

void gates(std::span<const float> b, std::span<const float> a, std::span<const float> a_log,
           std::span<const float> dt_bias, std::span<float> beta, std::span<float> g) {
    const std::size_t heads = a_log.size(), rows = rows_of(b.size(), heads);
    auto bias = first(dt_bias, heads, "Gated-DeltaNet gates", "dt bias");
    first(a, rows * heads, "Gated-DeltaNet gates", "a operand");
    first(beta, rows * heads, "Gated-DeltaNet gates", "beta output");
    first(g, rows * heads, "Gated-DeltaNet gates", "g output");
    for (std::size_t r = 0; r < rows; ++r)
        numerics::gdn_gates(a.subspan(r * heads, heads), b.subspan(r * heads, heads), a_log, bias,
                            beta.subspan(r * heads, heads), g.subspan(r * heads, heads));
}

void delta_step(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                std::span<const float> beta, std::span<const float> g, std::size_t key_heads,
                std::size_t value_heads, std::size_t dk, std::size_t dv, numerics::StateFormat sf,
                std::span<std::byte> state, std::span<float> out, std::span<const std::uint32_t> slots,
                std::span<const std::uint32_t> positions) {
    if (key_heads == 0 || value_heads % key_heads != 0)
        throw Error(fmt::format("delta rule: {} value heads over {} key heads", value_heads, key_heads));
    const std::size_t rows = rows_of(v.size(), value_heads * dv), group = value_heads / key_heads;
    const numerics::Keep keep = state_keep(sf);
    const std::size_t head_bytes = numerics::kept_bytes(keep, dk * dv);
    first(q, rows * key_heads * dk, "delta rule", "q operand");
    first(k, rows * key_heads * dk, "delta rule", "k operand");
    first(beta, rows * value_heads, "delta rule", "beta operand");
    first(g, rows * value_heads, "delta rule", "g operand");
    first(out, rows * value_heads * dv, "delta rule", "output");
    starts_fit(positions, rows, "delta rule");
    for (std::size_t r = 0; r < rows; ++r) {
        auto seq = of_sequence(state, value_heads * head_bytes, rows, r, slots);
        if (seq.size() < value_heads * head_bytes)
            throw Error(fmt::format("delta rule: the state of sequence {} holds {} bytes, {} are needed", r,
                                    seq.size(), value_heads * head_bytes));
        if (starts_sequence(positions, r)) std::fill_n(seq.data(), value_heads * head_bytes, std::byte{0});
        // Value heads are independent: split them over the host's cores.
        parallel_for(value_heads, 1, [&](std::size_t h0, std::size_t h1) {
            std::vector<float> S(dk * dv);
            for (std::size_t h = h0; h < h1; ++h) {
                auto sh = seq.subspan(h * head_bytes, head_bytes);
                const std::size_t kh = h / group, at = r * value_heads + h;
                numerics::read_row(sh, keep, S);
                numerics::delta_rule_step(S, q.subspan((r * key_heads + kh) * dk, dk),
                                          k.subspan((r * key_heads + kh) * dk, dk), v.subspan(at * dv, dv),
                                          g[at], beta[at], keep, out.subspan(at * dv, dv));
                numerics::keep_row(S, keep, sh); // exact: S holds values of the keep format
            }
        });
    }
}

void gated_norm(std::span<const float> x, std::span<const float> z, std::span<const float> w,
                std::size_t group, double eps, std::span<float> out) {
    if (group == 0) throw Error("gated RMSNorm: groups of 0 values");
    auto xs = whole_rows(x, group);
    numerics::gated_rms_norm(xs, first(z, xs.size(), "gated RMSNorm", "gate"),
                             first(w, group, "gated RMSNorm", "weight"), f32(eps),
                             first(out, xs.size(), "gated RMSNorm", "output"));
}

void sigmoid_gate(std::span<const float> x, std::span<const float> gate, std::span<float> out) {
    numerics::sigmoid_gate(x, first(gate, x.size(), "sigmoid gate", "gate"),
                           first(out, x.size(), "sigmoid gate", "output"));
}

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out) {
    numerics::silu_mul(gate, first(up, gate.size(), "SiLU-mul", "up operand"),
                       first(out, gate.size(), "SiLU-mul", "output"));
}

void swiglu_clamp(std::span<const float> gate, std::span<const float> up, float limit, float alpha,
                  std::span<float> out) {
    numerics::swiglu_clamp(gate, first(up, gate.size(), "clamped SwiGLU", "up operand"), limit, alpha,
                           first(out, gate.size(), "clamped SwiGLU", "output"));
}

void add(std::span<const float> a, std::span<const float> b, std::span<float> out) {
    numerics::add(a, first(b, a.size(), "add", "second operand"), first(out, a.size(), "add", "output"));
}

void argmax(std::span<const float> x, std::size_t width, std::span<float> out) {
    const std::size_t rows = rows_of(x.size(), width);
    first(out, rows, "arg-max", "output");
    for (std::size_t r = 0; r < rows; ++r)
        out[r] = static_cast<float>(numerics::argmax(x.subspan(r * width, width)));
}

void gelu(std::span<const float> x, std::span<float> out) {
    first(out, x.size(), "GELU", "output");
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = numerics::gelu(x[i]);
}

void geglu(std::span<const float> x, std::size_t n, std::span<float> out) {
    const std::size_t rows = rows_of(x.size(), 2 * n);
    first(out, rows * n, "GeGLU", "output");
    for (std::size_t r = 0; r < rows; ++r)
        numerics::gelu_mul(x.subspan(r * 2 * n, n), x.subspan(r * 2 * n + n, n), out.subspan(r * n, n));
}

void rope(std::span<float> qkv, std::size_t heads, std::size_t head_dim, double theta,
          std::span<const std::uint32_t> positions) {
    const std::size_t fused = 3 * heads * head_dim, rows = rows_of(qkv.size(), fused);
    first(positions, rows, "rope", "position list");
    for (std::size_t r = 0; r < rows; ++r) // the q heads, then the k heads, whole heads rotated
        numerics::rotate(qkv.subspan(r * fused, 2 * heads * head_dim), head_dim, head_dim, theta,
                         positions[r]);
}

void add_type(std::span<float> h, std::span<const float> table, std::size_t width,
              std::span<const std::uint32_t> qtype, std::span<const std::uint32_t> seq_starts) {
    for (std::size_t s = 0; s + 1 < seq_starts.size() && s < qtype.size(); ++s) {
        if ((qtype[s] + 1) * width > table.size())
            throw Error(fmt::format("add_type: type {} of sequence {} is past the table", qtype[s], s));
        if (seq_starts[s + 1] * width > h.size())
            throw Error(
                fmt::format("add_type: sequence {} ends at row {}, past the rows", s, seq_starts[s + 1]));
        auto row_of_type = table.subspan(qtype[s] * width, width);
        for (std::size_t t = seq_starts[s]; t < seq_starts[s + 1]; ++t) {
            auto row = h.subspan(t * width, width);
            numerics::add(row, row_of_type, row);
        }
    }
}

void gather_markers(std::span<const float> h, std::size_t width, std::span<const std::uint32_t> marker_rows,
                    std::span<float> out) {
    for (std::size_t m = 0; m < marker_rows.size(); ++m) {
        if ((marker_rows[m] + 1) * width > h.size())
            throw Error(
                fmt::format("gather_markers: marker {} names row {}, past the rows", m, marker_rows[m]));
        std::copy_n(h.begin() + marker_rows[m] * width, width, out.begin() + m * width);
    }
}

void act_features(std::span<const float> h, std::size_t width, std::span<const float> logits,
                  std::span<const std::uint32_t> seq_starts, std::span<const std::uint32_t> marker_starts,
                  std::span<float> out) {
    const std::size_t w = width + 4;
    for (std::size_t s = 0; s + 1 < seq_starts.size() && s + 1 < marker_starts.size(); ++s) {
        std::copy_n(h.begin() + seq_starts[s] * width, width, out.begin() + s * w);
        std::size_t m0 = marker_starts[s], m1 = marker_starts[s + 1], k = m1 - m0;
        std::vector<double> p;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t m = m0; m < m1; ++m)
            mx = std::max(mx, double(logits[m]));
        for (std::size_t m = m0; m < m1; ++m)
            p.push_back(numerics::exp(static_cast<float>(double(logits[m]) - mx))), sum += p.back();
        for (auto& v : p)
            v /= sum;
        std::vector<double> sorted = p;
        std::sort(sorted.rbegin(), sorted.rend());
        double top1 = k ? sorted[0] : 0, top2 = k > 1 ? sorted[1] : 0, entropy = 0;
        for (double v : p)
            if (v > 0) entropy -= v * std::log(v);
        auto o = out.subspan(s * w + width, 4);
        o[0] = f32(top1);
        o[1] = f32(top1 - top2);
        o[2] = f32(k > 1 ? entropy / std::log(double(k)) : 0.0);
        o[3] = f32(double(k) / 255.0);
    }
}

} // namespace cardsim::kernels
