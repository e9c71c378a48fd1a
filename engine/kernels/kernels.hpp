#pragma once
// What every unit computes, defined once: the simulator's units and the golden executor both call
// these, so a difference between them is in lowering, layout, addressing or data movement, never
// in arithmetic. Activations are f32 rows; weights are packed matrices (engine/numerics weights)
// or raw f32 vectors; caches and states are bytes in their keep formats (formats.hpp).
//
// These functions hold no arithmetic of their own: they lay the card's operands (rows, groups,
// heads, per-sequence states and windows) out for the numerics contract's kernels
// (engine/numerics: norms.hpp, conv.hpp, gated_deltanet.hpp, elementwise.hpp, rotary.hpp,
// matvec.hpp, attention.hpp, keep.hpp, functions.hpp), each held bit for bit to its exact spec
// (engine/numerics/spec). Every f32 operation is rounded once, every sum of more than two terms is
// a window sum (order-free), every NaN out is 0x7FC00000. Parameters given as double (eps, scales)
// are rounded to f32 first. The one exception is act_features (the encoder's act head): its
// softmax, sort and entropy are in double with the platform's log (the numerics library has no log).
// Splits over host threads (parallel.hpp) are by independent rows or heads, so no result depends
// on the thread count.

#include "engine/graph/graph.hpp"
#include "engine/numerics/knob.hpp"
#include "engine/numerics/scheme.hpp"
#include "engine/numerics/weights.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::kernels {

/// `out[r] = table[ids[r]]` for each row: the packed row dequantised (exact in f32).
void embed(const numerics::MatrixView& table, std::span<const std::uint32_t> ids, std::span<float> out);

/// RMSNorm of each `group` of each row (numerics::rms_norm): `(x · rsqrt(Σx²/group + eps)) · w` (or
/// `· (1 + w)`, `zero_centred`); no weight when `w` is empty (weights of ones, exactly `x · r`).
void rms_norm(std::span<const float> x, std::span<const float> w, std::size_t group, double eps,
              bool zero_centred, std::span<float> out);

/// LayerNorm of each `width` row (numerics::layer_norm): `(x − mean) · rsqrt(var + eps) · w + b`
/// (b may be empty), mean and variance by window sums.
void layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                std::size_t width, double eps, std::span<float> out);

/// Each row of `x` (`k` wide) times the matrix (`n` × `k`), as graph::Gemm documents it:
/// `epilogue(x wᵀ + b)`. The row is quantised under `scheme`, the exact matvec rounds each output
/// to f32 once, the bias (`n` values, or empty for none) is added in f32, then the epilogue
/// (`Accumulate` adds the result to what `out` holds, in f32; `Gelu` the correctly rounded GELU;
/// `Relu` max(0, y), a NaN staying NaN). `out` is `n` wide per row.
void matvec(const numerics::MatrixView& w, std::span<const float> x, const numerics::Scheme& scheme,
            graph::Epilogue epilogue, std::span<const float> bias, std::span<float> out);

/// Each row of `x` (`k` wide, this card's columns) times the matrix (`n` × `k`), as a partial
/// graph::Gemm: each output's exact part (numerics::matvec_partial), written as its 24 bytes
/// (numerics::encode) into `out`, `n` parts per row.
void matvec_partial(const numerics::MatrixView& w, std::span<const float> x, const numerics::Scheme& scheme,
                    std::span<std::byte> out);

/// The join of every card's parts (numerics::join): `out[e]` from part `e` of `mine` and part `e`
/// of each of the `parts − 1` blocks of `others` (each as many parts as `out` has values).
void sum_partials(std::span<const std::byte> mine, std::span<const std::byte> others, std::size_t parts,
                  std::span<float> out);

/// NeoX rotary embedding in place on each head of each row (first `rotary_dim` of every
/// `head_dim`), at `positions[row]`: angle of pair i = pos · theta^(−2i/rotary_dim)
/// (numerics::rotate).
void rotate(std::span<float> x, std::size_t width, std::size_t head_dim, std::size_t rotary_dim, double theta,
            std::span<const std::uint32_t> positions);
/// `rotate` of each row by YaRN's frequencies `freqs` (rotary_dim / 2), cos and sin scaled by `scale`
/// (numerics::rotate_scaled).
void rotate_scaled(std::span<float> x, std::size_t width, std::size_t head_dim, std::size_t rotary_dim,
                   std::span<const float> freqs, float scale, std::span<const std::uint32_t> positions);

/// Each sequence's part of a per-sequence store (a cache, a state) is padded to a multiple of this
/// many bytes: a rule of the program format, which a command's operand does not spell out (it gives
/// the store's bytes), so lowering, the golden executor and these kernels share it. Not the card's
/// DDR burst: a store itself starts on a burst (lower::Target::line).
inline constexpr std::size_t sequence_line = 64;

/// Where the state of row `r`'s sequence lies in a per-sequence store of `total` bytes whose
/// sequences take `per_seq` bytes each (lowering rounds each up to `sequence_line`; a store of whole
/// unrounded `per_seq`s is read as such). A bucket's rows are grouped by sequence, the same number
/// each, in order: one row each in a decode step, every row in sequence 0 in a prefill chunk of one
/// sequence, whose rows then run in order (the stateful kernels below take them one after another).
/// Throws cardsim::Error when the rows do not divide over the sequences.
struct SequenceSpan {
    std::size_t offset = 0, bytes = 0;
};
SequenceSpan sequence_of_row(std::size_t total, std::size_t per_seq, std::size_t rows, std::size_t r);

/// Where row `r`'s state lies in a per-sequence store as above: store sequence `slots[r]` when
/// `slots` is given (a slot-addressed store, lower::Options::slots; any row count), else
/// `sequence_of_row`. Throws cardsim::Error naming the row and the slot when the slot is past the
/// store's sequences, or when `slots` holds fewer than `rows` entries.
SequenceSpan store_of_row(std::size_t total, std::size_t per_seq, std::size_t rows,
                          std::span<const std::uint32_t> slots, std::size_t r);

/// Writes each row (`kv_heads × head_dim`) into its sequence's cache (row r is sequence r, or
/// `slots[r]` when given: store_of_row) at its position, every head row in the keep format `f`. A sequence's
/// cache holds each kv head's `max_positions` rows one after another: row (h, p) at (h · max_positions + p) ·
/// row bytes.
void cache_append(std::span<const float> x, std::size_t kv_heads, std::size_t head_dim,
                  std::size_t max_positions, numerics::CacheFormat f,
                  std::span<const std::uint32_t> positions, std::span<std::byte> cache,
                  std::span<const std::uint32_t> slots = {});

/// One query row per sequence (or per row over the cache of `slots[r]`: store_of_row) over its cache,
/// positions `0 ..= pos` (or the last `window`), grouped-query (query head h reads kv head h / (heads /
/// kv_heads)), by the numerics library's vector or array attention (engine/numerics/attention.hpp; the array
/// quantises the query under `query_scheme`), head h with the sink `sinks[h]` when `sinks` is not empty
/// (one a head). A soft cap is refused (cardsim::Error): no card unit takes it.
void attend(std::span<const float> q, std::size_t heads, std::size_t kv_heads, std::size_t head_dim,
            std::size_t max_positions, std::size_t window, double scale, double softcap,
            std::span<const float> sinks, numerics::CacheFormat f, numerics::AttentionMath math,
            const numerics::Scheme& query_scheme, std::span<const std::uint32_t> positions,
            std::span<const std::byte> keys, std::span<const std::byte> values, std::span<float> out,
            std::span<const std::uint32_t> slots = {});

/// Self attention of fused `[q | k | v]` rows within each sequence (`seq_starts`, then the row
/// count), keys at most `window` away on either side (0: all), scale rsqrt(head_dim) in f32: the
/// numerics library's vector attention over the sequence's key and value rows kept as F32.
void self_attention(std::span<const float> qkv, std::size_t heads, std::size_t head_dim, std::size_t window,
                    std::span<const std::uint32_t> seq_starts, std::span<float> out);

/// Causal depthwise convolution of each row (row r is sequence r, or `slots[r]`: store_of_row;
/// rows of one sequence in order, each shifting the window for the next) with its sequence's window of
/// the previous `kernel − 1` inputs (f32, oldest first), then the window shifts the row in; SiLU of
/// each result when `silu` (numerics::conv_step, conv_silu_step; no bias). Given `positions` (one
/// per row: slot-addressed stores), a row at position 0 starts its sequence from a zero window.
void conv(std::span<const float> x, std::span<const float> w, std::size_t channels, std::size_t kernel,
          bool silu, std::span<std::byte> window, std::span<float> out,
          std::span<const std::uint32_t> slots = {}, std::span<const std::uint32_t> positions = {});

/// `silu(x)` elementwise (correctly rounded).
void silu(std::span<const float> x, std::span<float> out);

/// L2 normalisation of each group: `(x · rsqrt(Σx² + eps)) · scale` (numerics::l2_norm).
void l2_norm(std::span<const float> x, std::size_t group, double eps, double scale, std::span<float> out);

/// Gated-DeltaNet gates of each row of value heads: `beta = sigmoid(b)`,
/// `g = −(exp(a_log) · softplus(a + dt_bias))` (numerics::gdn_gates).
void gates(std::span<const float> b, std::span<const float> a, std::span<const float> a_log,
           std::span<const float> dt_bias, std::span<float> beta, std::span<float> g);

/// One delta-rule step per row (row r is sequence r, or `slots[r]`: store_of_row; rows one after
/// another) and value head h (key head
/// h / (value_heads / key_heads)) on the state `dk × dv` kept in `state_format`:
/// `S ← S·e^g; δ = β(v − Sᵀk); S ← S + kδᵀ; out = Sᵀq`, then S kept again
/// (numerics::delta_rule_step: f32 operations and window sums; `out` from S before it is kept).
/// Given `positions` (one per row: slot-addressed stores), a row at position 0 starts its
/// sequence from a zero state.
void delta_step(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                std::span<const float> beta, std::span<const float> g, std::size_t key_heads,
                std::size_t value_heads, std::size_t dk, std::size_t dv, numerics::StateFormat state_format,
                std::span<std::byte> state, std::span<float> out, std::span<const std::uint32_t> slots = {},
                std::span<const std::uint32_t> positions = {});

/// Gated RMSNorm of each group: `(w ⊙ (x · rsqrt(mean x² + eps))) · silu(z)`
/// (numerics::gated_rms_norm).
void gated_norm(std::span<const float> x, std::span<const float> z, std::span<const float> w,
                std::size_t group, double eps, std::span<float> out);

/// `x · sigmoid(gate)`, `silu(gate) · up`, `a + b`, elementwise (numerics elementwise.hpp).
void sigmoid_gate(std::span<const float> x, std::span<const float> gate, std::span<float> out);
void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out);
/// gpt-oss's clamped SwiGLU of `gate` and `up` (numerics::swiglu_clamp).
void swiglu_clamp(std::span<const float> gate, std::span<const float> up, float limit, float alpha,
                  std::span<float> out);
void add(std::span<const float> a, std::span<const float> b, std::span<float> out);

/// The index of each `width` row's largest value as an f32 integer (numerics::argmax): the lowest
/// index among equals; a NaN counts as above every number (the first NaN wins, as in torch).
void argmax(std::span<const float> x, std::size_t width, std::span<float> out);

/// `gelu(x)` elementwise; `gelu(x[:, ..n]) · x[:, n..]` per row (`out` n wide; numerics::gelu_mul).
void gelu(std::span<const float> x, std::span<float> out);
void geglu(std::span<const float> x, std::size_t n, std::span<float> out);

/// NeoX rotary embedding in place on the q and k parts of fused rows, full head, at `positions`
/// (numerics::rotate with rotary_dim = head_dim).
void rope(std::span<float> qkv, std::size_t heads, std::size_t head_dim, double theta,
          std::span<const std::uint32_t> positions);

/// Adds `table[qtype[s]]` to every row of sequence s (numerics::add).
void add_type(std::span<float> h, std::span<const float> table, std::size_t width,
              std::span<const std::uint32_t> qtype, std::span<const std::uint32_t> seq_starts);

/// `out[m] = h[marker_rows[m]]`.
void gather_markers(std::span<const float> h, std::size_t width, std::span<const std::uint32_t> marker_rows,
                    std::span<float> out);

/// Per sequence: its first row of `h`, then over the softmax of its k markers' logits `[top1,
/// top1 − top2, entropy / ln k, k / 255]` (top2 = 0 and entropy term 0 when k < 2).
void act_features(std::span<const float> h, std::size_t width, std::span<const float> logits,
                  std::span<const std::uint32_t> seq_starts, std::span<const std::uint32_t> marker_starts,
                  std::span<float> out);

} // namespace cardsim::kernels
