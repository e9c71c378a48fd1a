#pragma once
// The op graph a model builder emits and the engine lowers.
//
// A graph names its activations as `Val`s whose size is a row count times a width, and the row
// count is one of the three a batch has: tokens, sequences or markers. Nothing in a graph knows the
// batch size: the engine lowers it once per `Bucket`, which fixes the row counts, and `layout`
// gives every value an offset in one arena. What persists between steps of a decoder (attention
// caches, convolution windows, Gated-DeltaNet states) is a `State`, kept per sequence outside the
// arena. Every constant is a `Weight`: a checkpoint tensor and the view of it the op reads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cardsim::graph {

/// An activation in a graph, an index into `Graph::vals`.
struct Val {
    std::uint32_t id = 0;
    friend auto operator<=>(const Val&, const Val&) = default;
};

/// A persistent per-sequence state, an index into `Graph::states`.
struct StateId {
    std::uint32_t id = 0;
    friend auto operator<=>(const StateId&, const StateId&) = default;
};

/// A checkpoint tensor, its index in the checkpoint the graph was built from.
using W = std::size_t;

/// What a value has one row per.
enum class Rows {
    Tokens, ///< one row per token of the batch
    Seqs,   ///< one row per sequence
    Markers ///< one row per marker
};

/// The shape of a value: `rows` rows of `width` f32.
struct Shape {
    Rows rows = Rows::Tokens;
    std::size_t width = 0;
    friend bool operator==(const Shape&, const Shape&) = default;
};

/// The whole tensor as stored; `transpose` when the op multiplies by its transpose (a Hugging Face
/// `Linear` weight, `[out, in]`, read as `x wᵀ`).
struct Whole {
    bool transpose = true;
    friend bool operator==(const Whole&, const Whole&) = default;
};

/// Rows `first .. first + count` of the tensor (as a matrix of its last dimension: a 3-D tensor's
/// rows run over its first two), e.g. one projection of a fused `[q | k | v]` matrix, some channels
/// of a convolution, or one expert's gate of a fused `[E, 2I, H]` expert tensor.
struct RowRange {
    std::size_t first = 0;
    std::size_t count = 0;
    bool transpose = true;
    friend bool operator==(const RowRange&, const RowRange&) = default;
};

/// The tensor's rows grouped by head, `stride` rows a head; the view takes rows
/// `offset .. offset + width` of every head, in head order (e.g. each head's query half of a gated
/// attention's `q_proj`); with `heads` > 0 only heads `first_head .. first_head + heads` (a
/// tensor-parallel card's share).
struct HeadPart {
    std::size_t stride = 0;
    std::size_t offset = 0;
    std::size_t width = 0;
    bool transpose = true;
    std::size_t first_head = 0;
    std::size_t heads = 0; ///< 0: every head
    friend bool operator==(const HeadPart&, const HeadPart&) = default;
};

/// Columns `first .. first + count` of every row of the tensor (as a matrix of its last
/// dimension): a tensor-parallel card's share of a row-parallel matrix's inputs. With `stride` > 1
/// the columns `first, first + stride, …` (`count` of them), and with `rows` > 0 only rows
/// `first_row .. first_row + rows`: one expert's gate (or up) of gpt-oss's `[E, H, 2I]`
/// gate_up_proj, whose columns interleave the experts' gate and up.
struct ColumnRange {
    std::size_t first = 0;
    std::size_t count = 0;
    bool transpose = true;
    std::size_t stride = 1;
    std::size_t first_row = 0;
    std::size_t rows = 0; ///< 0: every row
    friend bool operator==(const ColumnRange&, const ColumnRange&) = default;
};

/// Which part of a checkpoint tensor a constant reads.
using View = std::variant<Whole, RowRange, HeadPart, ColumnRange>;

/// A graph constant: a checkpoint tensor and the view of it.
struct Weight {
    W tensor = 0;
    View view = Whole{};
    friend bool operator==(const Weight&, const Weight&) = default;
};

/// What a GEMM does to each output element after the bias.
enum class Epilogue {
    None,      ///< store it
    Gelu,      ///< store the exact (erf) GELU of it
    Relu,      ///< store max(0, x)
    Accumulate ///< add it to what `out` already holds: the residual connection
};

/// A sequence's attention keys: `kv_heads × head_dim` f32 per position, positions from 0.
struct KeyCache {
    std::size_t kv_heads = 0;
    std::size_t head_dim = 0;
    friend bool operator==(const KeyCache&, const KeyCache&) = default;
};

/// A sequence's attention values, shaped as its keys.
struct ValueCache {
    std::size_t kv_heads = 0;
    std::size_t head_dim = 0;
    friend bool operator==(const ValueCache&, const ValueCache&) = default;
};

/// A causal convolution's window: the last `kernel - 1` inputs of `channels` channels, oldest
/// first, zeros before the first token.
struct ConvWindow {
    std::size_t channels = 0;
    std::size_t kernel = 0;
    friend bool operator==(const ConvWindow&, const ConvWindow&) = default;
};

/// A Gated-DeltaNet state: `heads` matrices of `dk × dv` f32 (keys by values), zero at start.
struct DeltaState {
    std::size_t heads = 0;
    std::size_t dk = 0;
    std::size_t dv = 0;
    friend bool operator==(const DeltaState&, const DeltaState&) = default;
};

/// What a state holds, per sequence.
using State = std::variant<KeyCache, ValueCache, ConvWindow, DeltaState>;

// ---- ops of the encoder (the seed's plan) ----

/// `out[i] = table[ids[i]]`, token rows; the token ids are the batch's input.
struct Embed {
    Weight table; ///< `[vocab, width]`
    Val out;      ///< token rows
};

/// LayerNorm over each row: `(x - mean) / sqrt(var + eps) * w + b` (the f64 reference takes the
/// statistics in f64; the card follows numerics::layer_norm: window sums, f32 operations).
struct LayerNorm {
    Val x;
    Weight w;                ///< scale, `[width]`
    std::optional<Weight> b; ///< shift, if the norm has one
    double eps = 1e-5;
    Val out; ///< the same shape as `x`
};

/// `out = epilogue(a wᵀ + b)` with `w` viewed as `[n, k]`: on the card, one matvec per row.
struct Gemm {
    Val a;                   ///< input, `k` wide
    Weight w;                ///< `[n, k]` after its view
    std::optional<Weight> b; ///< `[n]`, if there is one
    Epilogue epilogue = Epilogue::None;
    Val out; ///< `n` wide, as many rows as `a`; `partial`: `n · partial_words` wide
    /// A tensor-parallel card's part of a row-parallel matrix (its view some of the columns): `out`
    /// holds each output's exact part (numerics/partial_sum.hpp, 24 bytes), not its rounding; an
    /// AllReduce joins the cards' parts. No bias, no epilogue.
    bool partial = false;
};

/// The f32 words of one partial output (numerics::PARTIAL_BYTES / 4).
inline constexpr std::size_t partial_words = 6;

/// Rotary embedding (NeoX, rotate-half, full head) applied in place to the q and k parts of fused
/// `[q | k | v]` token rows, positions counted from the start of each sequence.
struct Rope {
    Val qkv; ///< token rows, `3 · heads · head_dim` wide
    std::size_t heads = 0;
    std::size_t head_dim = 0;
    double theta = 10000.0; ///< the base
};

/// Self attention within each sequence over fused `[q | k | v]` token rows, scale `head_dim^-½`.
struct Attention {
    Val qkv; ///< token rows, `3 · heads · head_dim` wide
    std::size_t heads = 0;
    std::size_t head_dim = 0;
    std::optional<std::size_t> window; ///< keys at most this far away on either side, or all
    Val out;                           ///< token rows, `heads · head_dim` wide
};

/// `out = gelu(x[:, ..n]) * x[:, n..]` with `x` twice as wide as `out` (exact erf GELU).
struct GeGlu {
    Val x;
    Val out;
};

/// Adds `table[qtype[s]]` to every row of sequence `s`, in place; `qtype` is the batch's input.
struct AddType {
    Val h;        ///< token rows
    Weight table; ///< `[types, width]`
};

/// The row of each marker: `out[m] = h[marker_token[m]]`; marker positions are the batch's input.
struct GatherMarkers {
    Val h;   ///< token rows
    Val out; ///< marker rows
};

/// Per sequence, its first token's row of `h` followed by `[top1, top1 - top2, entropy / ln k,
/// k / 255]` over the softmax of its `k` markers' logits (the act head's input); with fewer than two
/// markers top2 and the entropy term are 0 (all four features are 0 when k = 0).
struct ActFeatures {
    Val h;      ///< token rows
    Val logits; ///< marker rows, one wide
    Val out;    ///< sequence rows, `h` width plus four
};

// ---- ops of the decoders ----

/// RMSNorm over each group of `group` elements of a row (`group` = width for a row norm, the head
/// dim for a per-head QK norm): `x · rsqrt(mean(x²) + eps) · w`, or `· (1 + w)` when
/// `zero_centred`, or no weight at all.
struct RmsNorm {
    Val x;
    std::optional<Weight> w; ///< `[group]`
    double eps = 1e-6;
    bool zero_centred = false;
    std::size_t group = 0;
    Val out; ///< the same shape as `x`; may be `x` (in place)
};

/// YaRN rotary scaling (transformers' `rope_type: yarn`): each pair's frequency blends theta's and theta's
/// over `factor` by a ramp between the pairs turning `beta_fast` and `beta_slow` times over `original_max`
/// positions; cos and sin are scaled by `attention_factor`.
struct YarnScaling {
    double factor = 1, beta_fast = 32, beta_slow = 1;
    std::size_t original_max = 4096;
    bool truncate = true;
    double attention_factor = 1;
    friend bool operator==(const YarnScaling&, const YarnScaling&) = default;
};

/// Rotary embedding in place on each head of `x` (NeoX rotate-half over the first `rotary_dim`
/// elements of every `head_dim`, the rest untouched), at each row's position in its sequence:
/// angle of pair `i` = `pos · theta^(-2i / rotary_dim)`. Pair `i` is elements `(i, i + rotary_dim/2)`,
/// or `(2i, 2i + 1)` when `interleaved` (GPT-J style, DeepSeek's; no card command rotates so).
struct Rotate {
    Val x; ///< token rows, heads × head_dim wide
    std::size_t head_dim = 0;
    std::size_t rotary_dim = 0; ///< even, at most head_dim (partial rotary: head_dim · fraction)
    double theta = 10000.0;
    bool interleaved = false;
    std::optional<YarnScaling> yarn; ///< no rotation unit computes it yet
};

/// Writes each token row of `x` into its sequence's cache at the row's position.
struct CacheAppend {
    Val x;         ///< token rows, kv_heads × head_dim wide
    StateId cache; ///< a KeyCache or a ValueCache
};

/// One query row per token over its sequence's cache, positions `0 ..= pos` (after this step's
/// append), grouped-query: query head `h` reads kv head `h / (heads / kv_heads)`;
/// `out = softmax(scale · q kᵀ [+ softcap]) v`, optionally within a window, with sinks.
struct AttendCache {
    Val q; ///< token rows, heads × head_dim wide
    StateId keys;
    StateId values;
    std::size_t heads = 0;
    std::size_t kv_heads = 0;
    std::size_t head_dim = 0;
    double scale = 1.0;
    std::optional<std::size_t> window; ///< only the last `window` positions, or all of them
    std::optional<Weight> sinks;       ///< a per-head logit that takes part in the softmax only
    std::optional<double> softcap;     ///< scores become `softcap · tanh(score / softcap)`
    Val out;                           ///< token rows, heads × head_dim wide
};

/// Causal depthwise convolution over time of each channel, with the window's previous inputs:
/// `out[c] = Σ_{j<K} w[c, j] · x_{t-K+1+j}[c]`; the window then shifts `x` in. No bias, no SiLU.
struct Conv {
    Val x;          ///< token rows, channels wide
    Weight w;       ///< `[channels, 1, K]` after its view
    StateId window; ///< a ConvWindow of these channels
    Val out;
};

/// `out = x · sigmoid(x)` elementwise; `out` may be `x`.
struct Silu {
    Val x;
    Val out;
};

/// L2 normalisation of each group: `x · rsqrt(Σ x² + eps) · scale` (Gated-DeltaNet q and k,
/// `scale` = dk^-½ for q, 1 for k).
struct L2Norm {
    Val x;
    std::size_t group = 0;
    double eps = 1e-6;
    double scale = 1.0;
    Val out;
};

/// Gated-DeltaNet gates per value head: `beta = sigmoid(b)`, `g = -exp(a_log) · softplus(a + dt_bias)`.
struct GdnGates {
    Val b;          ///< token rows, value heads wide
    Val a;          ///< token rows, value heads wide
    Weight a_log;   ///< `[value heads]`
    Weight dt_bias; ///< `[value heads]`
    Val beta;
    Val g;
};

/// One delta-rule step per value head `h` (key head `h / (value_heads / key_heads)`), state S of
/// `dk × dv`: `S ← S·e^g; δ = β(v − Sᵀk); S ← S + k δᵀ; out = Sᵀq`.
struct DeltaStep {
    Val q;         ///< key_heads × dk, already L2-normalised and scaled
    Val k;         ///< key_heads × dk, L2-normalised
    Val v;         ///< value_heads × dv
    Val beta;      ///< value_heads
    Val g;         ///< value_heads
    StateId state; ///< a DeltaState
    std::size_t key_heads = 0;
    std::size_t value_heads = 0;
    std::size_t dk = 0;
    std::size_t dv = 0;
    Val out; ///< value_heads × dv
};

/// Gated RMSNorm per group: `w ⊙ (x · rsqrt(mean(x²) + eps)) · silu(z)` (plain `w`).
struct GatedRmsNorm {
    Val x;
    Val z;
    Weight w; ///< `[group]`
    double eps = 1e-6;
    std::size_t group = 0;
    Val out;
};

/// `out = x · sigmoid(gate)` elementwise: a gated attention's output gate.
struct SigmoidGate {
    Val x;
    Val gate;
    Val out;
};

/// `out = silu(gate) · up` elementwise: the SwiGLU of an MLP.
struct SiluMul {
    Val gate;
    Val up;
    Val out;
};

/// `out = a + b` elementwise; `out` may be `a` (the residual stream, in place).
struct Add {
    Val a;
    Val b;
    Val out;
};

/// The index of each row's largest element (the lowest index among equals; on the card a NaN counts
/// as above every number, so the first NaN wins), stored in the one-wide `out` as an f32 integer:
/// the next token of greedy decoding.
struct ArgMax {
    Val x;
    Val out;
};

// ---- ops no card of the default config runs; graphs carry them so the shim can refuse them ----

/// `out = gelu(x)` elementwise, exact (erf) GELU.
struct Gelu {
    Val x;
    Val out;
};

/// `out = max(0, x)` elementwise.
struct Relu {
    Val x;
    Val out;
};

/// `out = x · factor` elementwise (an embedding scale).
struct Scale {
    Val x;
    double factor = 1.0;
    Val out;
};

/// `out = cap · tanh(x / cap)` elementwise (a logit soft cap).
struct Softcap {
    Val x;
    double cap = 30.0;
    Val out;
};

/// `out = gelu(gate) · up` elementwise: the GeGLU of an MLP with separate gate and up projections
/// (Gemma), exact (erf) GELU or, when `tanh`, its tanh approximation
/// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` (`gelu_pytorch_tanh`). No card command runs it.
struct GeluMul {
    Val gate;
    Val up;
    bool tanh = false;
    Val out;
};

/// A mixture of experts: a router picks `top_k` of the experts per row, each a SwiGLU MLP
/// (`gate`, `up`, `down` per expert, `intermediate` wide), and `out` is the router-weighted sum
/// plus the shared expert. Routing (engine/numerics/router.hpp): the `top_k` largest router logits
/// (ties: the lower expert index first), weighted by a softmax over all experts' logits, divided
/// by the chosen ones' sum when `norm_topk_prob` (the same as a softmax over the k chosen logits).
/// `shared_gate`, `shared_up`, `shared_down` are the shared expert's SwiGLU projections
/// (`shared_intermediate` wide), added scaled by `sigmoid(x · shared_expert_gateᵀ)` (Qwen3-Next's
/// `[1, width]` gate) or unscaled without that gate.
/// Under expert parallelism a card holds `gate.size()` of the router's `routed` experts, from
/// `first_expert`, and the shared expert only if its card runs it; `out` then holds each output's
/// exact part (`width · partial_words` wide) of the terms its experts make, for an AllReduce to join.
struct Moe {
    Val x;
    Weight router;                      ///< `[experts, width]`
    std::vector<Weight> gate, up, down; ///< this card's experts, `first_expert` onwards
    std::optional<Weight> shared_gate, shared_up, shared_down;
    std::optional<Weight> shared_expert_gate; ///< `[1, width]`
    std::size_t top_k = 1;
    std::size_t intermediate = 0;        ///< each expert's hidden width
    std::size_t shared_intermediate = 0; ///< the shared expert's hidden width (0: none)
    bool norm_topk_prob = true;          ///< the chosen weights renormalised to sum 1
    /// gpt-oss: the router's bias `[experts]`, each expert's gate, up and down biases, and its
    /// clamped SwiGLU (gate ≤ limit, up in [−limit, limit], (up + 1) · gate · σ(alpha · gate)).
    std::optional<Weight> router_bias;
    std::vector<Weight> gate_bias, up_bias, down_bias;
    std::optional<double> swiglu_limit;
    double swiglu_alpha = 1.702;
    std::size_t first_expert = 0; ///< the index of this card's first expert
    std::size_t all_experts = 0;  ///< the router's experts (0: gate.size(), all on this card)
    bool partial = false;         ///< `out` holds exact parts (expert parallel)
    Val out;
    /// The experts the router chooses among.
    std::size_t routed() const { return all_experts ? all_experts : gate.size(); }
};

/// A per-head matmul of `x` (heads × k wide) into `out` (heads × n wide): multi-head latent
/// attention's absorbed up-projections. Head `h` of the view is `[n, k]` and multiplied by its
/// transpose (`out_h = x_h w_hᵀ`) when the view says `transpose`, else `[k, n]` (`out_h = x_h w_h`).
struct HeadMatmul {
    Val x;
    Weight w;
    std::size_t heads = 0;
    Val out;
};

/// Multi-head latent attention over a sequence's latent cache (DeepSeek's, absorbed form): one
/// query row per token, positions `0 ..= pos` (after this step's append). Head `h` scores position
/// `t` as `scale · (q_latent_h · c_t + q_rope_h · r_t)`, where `c_t` is the latent cache's row and
/// `r_t` the rope-key cache's (both one head, shared by every query head); `out_h` is the softmax-
/// weighted sum of the latent rows `c_t`.
struct LatentAttendCache {
    Val q_latent;   ///< token rows, heads × latent_dim wide
    Val q_rope;     ///< token rows, heads × rope_dim wide
    StateId latent; ///< a KeyCache of one head of latent_dim
    StateId rope;   ///< a KeyCache of one head of rope_dim
    std::size_t heads = 0;
    std::size_t latent_dim = 0;
    std::size_t rope_dim = 0;
    double scale = 1.0;
    Val out; ///< token rows, heads × latent_dim wide
};

/// How a tensor-parallel AllReduce joins the cards' parts.
enum class Exchange {
    Exact, ///< every card gathers every card's exact parts and rounds them once: the one-card bits
    F32,   ///< each card's f32 outputs, added in ring order (a reduce-scatter then an all-gather)
};

/// Tensor parallel: the sum over the `cards` cards of each card's `x`, into `out` on every card
/// (`width` outputs a row). Exact: `x` is a partial Gemm's parts (`width · partial_words` wide),
/// `scratch` receives the other cards' (`(cards − 1) · width · partial_words` wide) and `out` is
/// their join. F32: `x` is f32 and `out` is `x` (in place); `scratch` receives one chunk (`width`).
struct AllReduce {
    Val x;
    Val scratch;
    Val out;
    Exchange exchange = Exchange::Exact;
    std::size_t cards = 1;
    std::size_t width = 0;
};

/// Tensor parallel: every card's `x` (its share of the columns, each card as wide), side by side in
/// card order in every row of `out` on every card; the rows come round the ring straight into their
/// places in `out`.
struct AllGather {
    Val x;
    Val out;
    std::size_t cards = 1;
};

/// One step of a graph. Every op runs on the rows the batch has, not the bucket's padded count.
using Op = std::variant<Embed, LayerNorm, Gemm, Rope, Attention, GeGlu, AddType, GatherMarkers, ActFeatures,
                        RmsNorm, Rotate, CacheAppend, AttendCache, Conv, Silu, L2Norm, GdnGates, DeltaStep,
                        GatedRmsNorm, SigmoidGate, SiluMul, Add, ArgMax, Gelu, Relu, Scale, Softcap, Moe,
                        HeadMatmul, GeluMul, LatentAttendCache, AllReduce, AllGather>;

/// The name of an op's kind, as written in its type (`"Gemm"`, `"AttendCache"`).
std::string_view kind(const Op& op);

/// Values an op reads, then values it writes. An in-place op lists the value on both sides.
struct Uses {
    std::vector<Val> reads;
    std::vector<Val> writes;
};

/// The values `op` reads and writes.
Uses uses(const Op& op);

/// The states `op` reads and writes (a state it updates is on both sides).
struct StateUses {
    std::vector<StateId> reads;
    std::vector<StateId> writes;
};

/// The states `op` reads and writes.
StateUses state_uses(const Op& op);

/// The constants `op` reads, in the order its fields list them.
std::vector<Weight> weights(const Op& op);

/// Which part of a model an op belongs to: what a refusal names ("layer 3, mixer: ...").
enum class Part { Embedding, Mixer, Attention, Ffn, Head };

/// Where in a model an op sits: its layer (none for embedding and head) and part.
struct Site {
    std::optional<std::size_t> layer;
    Part part = Part::Embedding;
    friend bool operator==(const Site&, const Site&) = default;
};

/// The spelling of a part in refusals and listings: `embedding`, `mixer`, `attention`, `ffn`, `head`.
std::string_view name(Part p);

/// A model's forward pass (a decode step, for decoders) as ops over values.
struct Graph {
    std::vector<Shape> vals;        ///< the shape of every value
    std::vector<std::string> names; ///< a readable name per value (`"layer3.q"`), for listings
    std::vector<State> states;      ///< what persists per sequence between steps
    std::vector<Op> ops;            ///< the ops, in the order they run
    std::vector<Site> sites;        ///< where each op sits, indexed like `ops`
    std::optional<Val> logits;      ///< logits: marker rows one wide (encoder) or token rows vocab wide
    std::optional<Val> act;         ///< sequence rows, two wide, the encoder's act head
    std::optional<Val> next;        ///< token rows, one wide: the arg-max of each row's logits

    /// A new value of `width` f32 per row.
    Val val(Rows rows, std::size_t width, std::string name = {});
    /// A new per-sequence state.
    StateId state(State s);
    /// The shape of `v`.
    const Shape& shape(Val v) const { return vals.at(v.id); }
    /// Appends an op at `site`.
    void push(Op op, Site site = {});
    /// The graph's outputs that exist: logits, act, next, in that order.
    std::vector<Val> outputs() const;
};

/// The row counts of one lowering.
struct Bucket {
    std::size_t tokens = 1;
    std::size_t seqs = 1;
    std::size_t markers = 0;
    /// The row count of `r`.
    std::size_t rows(Rows r) const;
    friend bool operator==(const Bucket&, const Bucket&) = default;
};

/// Checks that every value, state and weight view an op names is consistent with the graph:
/// ids in range, states of the kind the op needs, widths that agree (e.g. a Gemm's output as wide
/// as its view's rows when the view says so). Returns the first problem as a sentence naming the op,
/// or nothing.
std::optional<std::string> check(const Graph& g);

} // namespace cardsim::graph
