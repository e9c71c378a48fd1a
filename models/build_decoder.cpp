// The decoder graph: one decode step, following transformers' Qwen3 / Qwen2 / Llama / Mistral /
// Gemma-2 / DeepSeek-V2/V3 / Qwen3-Next / Qwen3.5 / Qwen3.5-MoE modeling code (formulas in models/README.md).

#include "engine/error.hpp"
#include "models/build.hpp"
#include "models/tensors.hpp"

#include <fmt/format.h>

#include <cmath>

namespace cardsim::models {
namespace {

using namespace graph;

/// The state of building one decoder graph.
class DecoderBuilder {
public:
    DecoderBuilder(const DecoderSpec& d, const std::map<std::string, W>& t, std::optional<Shard> shard = {})
        : d_(d), t_(t), n_{d}, shard_(shard) {
        if (shard_) refuse_what_no_split_keeps();
    }

    BuiltGraph build() {
        const std::size_t H = d_.hidden;
        x_ = g_.val(Rows::Tokens, H, "hidden");
        const Site embedding{std::nullopt, Part::Embedding};
        g_.push(Embed{plain(n_.embed()), x_}, embedding);
        if (d_.embed_scale) g_.push(Scale{x_, *d_.embed_scale, x_}, embedding);
        for (std::size_t i = 0; i < d_.layers.size(); ++i) {
            if (d_.layers[i].mixer == Mixer::Attention)
                attention(i);
            else if (d_.layers[i].mixer == Mixer::LatentAttention)
                latent_attention(i);
            else
                deltanet(i);
            ffn(i);
        }
        const Site head{std::nullopt, Part::Head};
        Val f = g_.val(Rows::Tokens, H, "final_norm");
        g_.push(RmsNorm{x_, plain(n_.final_norm()), d_.eps, d_.zero_centred, H, f}, head);
        Val logits = g_.val(Rows::Tokens, d_.vocab, "logits");
        if (shard_) { // this card's rows of the vocabulary, then every card's side by side
            const std::size_t part = d_.vocab / shard_->cards;
            Val mine = g_.val(Rows::Tokens, part, "logits_part");
            g_.push(Gemm{f, Weight{w(n_.lm_head()), RowRange{shard_->card * part, part, true}}, std::nullopt,
                         Epilogue::None, mine},
                    head);
            g_.push(AllGather{mine, logits, shard_->cards}, head);
        } else {
            g_.push(Gemm{f, Weight{w(n_.lm_head()), Whole{true}}, std::nullopt, Epilogue::None, logits},
                    head);
        }
        if (d_.final_softcap) {
            Val capped = g_.val(Rows::Tokens, d_.vocab, "logits_capped");
            g_.push(Softcap{logits, *d_.final_softcap, capped}, head);
            logits = capped;
        }
        Val next = g_.val(Rows::Tokens, 1, "next");
        g_.push(ArgMax{logits, next}, head);
        g_.logits = logits;
        g_.next = next;
        return BuiltGraph{std::move(g_)};
    }

private:
    W w(const std::string& name) const { return t_.at(name); }
    /// A constant read whole and not multiplied (norm weights, tables, vectors).
    Weight plain(const std::string& name) const { return Weight{w(name), Whole{false}}; }
    /// A constant read whole as a Linear weight.
    Weight linear(const std::string& name) const { return Weight{w(name), Whole{true}}; }
    std::optional<Weight> bias(bool has, std::string_view module) const {
        if (!has) return std::nullopt;
        return plain(n_.layer(layer_, fmt::format("{}.bias", module)));
    }
    Val val(std::size_t width, std::string_view what) {
        return g_.val(Rows::Tokens, width, fmt::format("layer{}.{}", layer_, what));
    }
    Val gemm(Val a, Weight weight, std::optional<Weight> b, std::size_t width, std::string_view what) {
        Val out = val(width, what);
        g_.push(Gemm{a, weight, b, Epilogue::None, out}, site_);
        return out;
    }
    /// This card's rows `first .. first + count` of a `total`-row projection's share (column
    /// parallel): count = total / cards from row card · count; the whole tensor on one card.
    Weight share_rows(const std::string& name, std::size_t total) const {
        if (!shard_) return linear(name);
        const std::size_t part = total / shard_->cards;
        return Weight{w(name), RowRange{shard_->card * part, part, true}};
    }
    std::optional<Weight> share_bias(bool has, std::string_view module, std::size_t total) const {
        if (!has || !shard_) return bias(has, module);
        const std::size_t part = total / shard_->cards;
        return Weight{w(n_.layer(layer_, fmt::format("{}.bias", module))),
                      RowRange{shard_->card * part, part, false}};
    }
    /// `a` (this card's `columns` of the inputs) times a row-parallel projection `name`, `width`
    /// outputs: on one card a Gemm; on a card of a tensor-parallel plan its partial Gemm over its
    /// columns and the AllReduce that joins every card's.
    Val row_parallel(Val a, const std::string& name, std::size_t columns, std::size_t width,
                     std::string_view what) {
        if (!shard_) return gemm(a, linear(name), std::nullopt, width, what);
        const Weight weight{w(name), ColumnRange{shard_->card * columns, columns, true}};
        Val out = val(width, what);
        if (shard_->exchange == Exchange::Exact) {
            Val part = val(width * partial_words, fmt::format("{}_part", what));
            Gemm gm{a, weight, std::nullopt, Epilogue::None, part};
            gm.partial = true;
            g_.push(gm, site_);
            join(part, out, width, what);
        } else {
            g_.push(Gemm{a, weight, std::nullopt, Epilogue::None, out}, site_);
            join(out, out, width, what);
        }
        return out;
    }
    /// The AllReduce that joins every card's `mine` (`width` outputs: exact parts, or f32 sums
    /// summed in place) into `out`, by the shard's exchange.
    void join(Val mine, Val out, std::size_t width, std::string_view what) {
        const std::size_t N = shard_->cards;
        if (shard_->exchange == Exchange::Exact) {
            Val scratch = val((N - 1) * width * partial_words, fmt::format("{}_parts", what));
            g_.push(AllReduce{mine, scratch, out, Exchange::Exact, N, width}, site_);
        } else {
            Val scratch = val(width, fmt::format("{}_chunk", what));
            g_.push(AllReduce{mine, scratch, out, Exchange::F32, N, width}, site_);
        }
    }
    /// What a tensor-parallel split cannot keep exact, refused by name.
    void refuse_what_no_split_keeps() const {
        const auto& s = *shard_;
        const std::size_t N = s.cards;
        auto refuse = [&](const std::string& why) {
            throw Refusal(fmt::format("tensor parallel over {} cards: {}", N, why));
        };
        const auto& a = d_.attention;
        bool experts = false;
        for (std::size_t i = 0; i < d_.layers.size(); ++i) {
            experts = experts || d_.layers[i].moe;
            if (d_.layers[i].moe && !s.experts)
                refuse(fmt::format("layer {} has experts; tensor parallel splits dense MLPs "
                                   "only (--plan ep splits the experts by index, --plan pp the layers)",
                                   i));
            if (d_.layers[i].mixer == Mixer::LatentAttention)
                refuse(fmt::format("layer {} is latent attention, whose heads are not split yet", i));
        }
        if (s.experts && !experts)
            throw Refusal(fmt::format("expert parallel over {} cards: the model has no experts to split "
                                      "(--plan tp splits its heads and MLP columns alike)",
                                      N));
        if (s.experts && d_.moe->experts % N)
            throw Refusal(fmt::format("expert parallel over {} cards: the {} experts of a layer must "
                                      "divide by the cards",
                                      N, d_.moe->experts));
        if (d_.delta && (d_.delta->key_heads % N || d_.delta->value_heads % N ||
                         (d_.delta->value_heads / N * d_.delta->value_dim) % s.align))
            refuse(
                fmt::format("the Gated-DeltaNet's {} key and {} value heads must divide by the cards, each "
                            "card's value columns in whole blocks of {} (weights.block_size)",
                            d_.delta->key_heads, d_.delta->value_heads, s.align));
        if (a.o_bias || d_.mlp_bias)
            refuse("a bias on the output or down projection would be added on every card");
        if (a.heads % N || (a.kv_heads % N && N % a.kv_heads))
            refuse(
                fmt::format("the {} query heads must divide by the cards, and the {} key-value heads by the "
                            "cards or the cards by them",
                            a.heads, a.kv_heads));
        const std::size_t q_part = a.heads / N * a.head_dim;
        if (q_part % s.align)
            refuse(fmt::format(
                "each card's {} attention columns must be whole blocks of {} (weights.block_size)", q_part,
                s.align));
        if (d_.intermediate % N || (d_.intermediate / N) % s.align)
            refuse(fmt::format("the MLP's {} intermediate columns must split into whole blocks of {} a card "
                               "(weights.block_size)",
                               d_.intermediate, s.align));
        if (d_.vocab % N) refuse(fmt::format("the vocabulary of {} must divide by the cards", d_.vocab));
    }

    /// The layer's input norm, into a new value.
    Val input_norm(std::size_t i, std::string_view tensor, std::string_view what) {
        Val h = val(d_.hidden, what);
        g_.push(RmsNorm{x_, plain(n_.layer(i, tensor)), d_.eps, d_.zero_centred, d_.hidden, h}, site_);
        return h;
    }
    void residual(Val out) { g_.push(Add{x_, out, x_}, site_); }
    /// Adds a block's output `out` to the stream, normed first by `tensor` with sandwich norms
    /// (Gemma-2's post-attention and post-feedforward norms).
    void residual(Val out, std::string_view tensor, std::string_view what) {
        if (d_.sandwich_norms) {
            Val normed = val(d_.hidden, what);
            g_.push(RmsNorm{out, plain(n_.layer(layer_, tensor)), d_.eps, d_.zero_centred, d_.hidden, normed},
                    site_);
            out = normed;
        }
        residual(out);
    }

    void attention(std::size_t i) {
        layer_ = i;
        site_ = Site{i, Part::Attention};
        const auto& a = d_.attention;
        const std::size_t hd = a.head_dim, q_width = a.heads * hd;
        const std::size_t cards = shard_ ? shard_->cards : 1; // this card's share of the heads
        // With fewer key-value heads than cards each card keeps the one its query heads read
        // (cards sharing it compute it alike), as Megatron and vLLM replicate them.
        const std::size_t heads = a.heads / cards, kv_heads = std::max<std::size_t>(1, a.kv_heads / cards);
        const std::size_t first_kv = shard_ ? shard_->card * a.kv_heads / cards : 0;
        auto kv_rows = [&](const std::string& name) {
            return shard_ ? Weight{w(name), RowRange{first_kv * hd, kv_heads * hd, true}} : linear(name);
        };
        auto kv_bias = [&](std::string_view module) -> std::optional<Weight> {
            if (!a.qkv_bias || !shard_) return bias(a.qkv_bias, module);
            return Weight{w(n_.layer(layer_, fmt::format("{}.bias", module))),
                          RowRange{first_kv * hd, kv_heads * hd, false}};
        };
        Val h = input_norm(i, "input_layernorm.weight", "attn_norm");
        const std::string q_proj = n_.layer(i, "self_attn.q_proj.weight");
        Val q, gate{};
        if (a.output_gate) {
            // q_proj viewed as [heads, 2·hd]: each head's query, then its output gate.
            const std::string qb = n_.layer(i, "self_attn.q_proj.bias");
            // On a card of a tensor-parallel plan, its heads only.
            auto part = [&](std::size_t offset, bool transpose) {
                return shard_ ? HeadPart{2 * hd, offset, hd, transpose, shard_->card * heads, heads}
                              : HeadPart{2 * hd, offset, hd, transpose};
            };
            std::optional<Weight> q_bias, gate_bias;
            if (a.qkv_bias) {
                q_bias = Weight{w(qb), part(0, false)};
                gate_bias = Weight{w(qb), part(hd, false)};
            }
            q = gemm(h, Weight{w(q_proj), part(0, true)}, q_bias, q_width / cards, "q");
            gate = gemm(h, Weight{w(q_proj), part(hd, true)}, gate_bias, q_width / cards, "gate");
        } else {
            q = gemm(h, share_rows(q_proj, q_width), share_bias(a.qkv_bias, "self_attn.q_proj", q_width),
                     q_width / cards, "q");
        }
        Val k = gemm(h, kv_rows(n_.layer(i, "self_attn.k_proj.weight")), kv_bias("self_attn.k_proj"),
                     kv_heads * hd, "k");
        Val v = gemm(h, kv_rows(n_.layer(i, "self_attn.v_proj.weight")), kv_bias("self_attn.v_proj"),
                     kv_heads * hd, "v");
        if (a.qk_norm) {
            Val qn = val(q_width / cards, "q_norm"), kn = val(kv_heads * hd, "k_norm");
            g_.push(
                RmsNorm{q, plain(n_.layer(i, "self_attn.q_norm.weight")), d_.eps, d_.zero_centred, hd, qn},
                site_);
            g_.push(
                RmsNorm{k, plain(n_.layer(i, "self_attn.k_norm.weight")), d_.eps, d_.zero_centred, hd, kn},
                site_);
            q = qn;
            k = kn;
        }
        std::optional<YarnScaling> yarn;
        if (a.yarn)
            yarn = YarnScaling{a.yarn->factor,       a.yarn->beta_fast, a.yarn->beta_slow,
                               a.yarn->original_max, a.yarn->truncate,  a.yarn->attention_factor};
        g_.push(Rotate{q, hd, a.rotary_dim, a.theta, false, yarn}, site_);
        g_.push(Rotate{k, hd, a.rotary_dim, a.theta, false, yarn}, site_);
        StateId keys = g_.state(KeyCache{kv_heads, hd});
        StateId values = g_.state(ValueCache{kv_heads, hd});
        g_.push(CacheAppend{k, keys}, site_);
        g_.push(CacheAppend{v, values}, site_);
        Val att = val(q_width / cards, "attn");
        std::optional<Weight> sinks; // gpt-oss: a logit per head (this card's heads)
        if (a.sinks)
            sinks = Weight{w(n_.layer(i, "self_attn.sinks")),
                           RowRange{shard_ ? shard_->card * heads : 0, heads, false}};
        g_.push(AttendCache{q, keys, values, heads, kv_heads, hd,
                            a.scale.value_or(1.0 / std::sqrt(static_cast<double>(hd))), d_.layers[i].window,
                            sinks, a.softcap, att},
                site_);
        if (a.output_gate) {
            Val gated = val(q_width / cards, "attn_gated");
            g_.push(SigmoidGate{att, gate, gated}, site_);
            att = gated;
        }
        Val mixed = shard_ ? row_parallel(att, n_.layer(i, "self_attn.o_proj.weight"), q_width / cards,
                                          d_.hidden, "mixer_out")
                           : gemm(att, linear(n_.layer(i, "self_attn.o_proj.weight")),
                                  bias(a.o_bias, "self_attn.o_proj"), d_.hidden, "mixer_out");
        residual(mixed, "post_attention_layernorm.weight", "mixer_out_norm");
    }

    /// DeepSeek's multi-head latent attention in its absorbed decode form: the cache holds one
    /// normed latent row (kv_lora_rank) and one rotated rope key per position; each head's query
    /// is carried into the latent space by its key up-projection (rows `0..nope` of its part of
    /// `kv_b_proj`), and its output out of it by its value up-projection (rows `nope..nope+v`).
    /// The same numbers as transformers' un-absorbed form: q_nope · (W_uk c) = (W_ukᵀ q_nope) · c.
    void latent_attention(std::size_t i) {
        layer_ = i;
        site_ = Site{i, Part::Attention};
        const auto& a = d_.attention;
        const auto& m = *d_.latent;
        const std::size_t heads = a.heads, qk = m.qk_dim();
        Val h = input_norm(i, "input_layernorm.weight", "attn_norm");
        Val src = h;
        std::string q_proj = n_.layer(i, "self_attn.q_proj.weight");
        if (m.q_rank > 0) {
            Val cq = gemm(h, linear(n_.layer(i, "self_attn.q_a_proj.weight")), std::nullopt, m.q_rank, "q_a");
            Val cqn = val(m.q_rank, "q_a_norm");
            g_.push(RmsNorm{cq, plain(n_.layer(i, "self_attn.q_a_layernorm.weight")), d_.eps, false, m.q_rank,
                            cqn},
                    site_);
            src = cqn;
            q_proj = n_.layer(i, "self_attn.q_b_proj.weight");
        }
        const W qw = w(q_proj);
        Val q_nope =
            gemm(src, Weight{qw, HeadPart{qk, 0, m.nope, true}}, std::nullopt, heads * m.nope, "q_nope");
        Val q_rope =
            gemm(src, Weight{qw, HeadPart{qk, m.nope, m.rope, true}}, std::nullopt, heads * m.rope, "q_rope");
        const W kva = w(n_.layer(i, "self_attn.kv_a_proj_with_mqa.weight"));
        Val ckv = gemm(h, Weight{kva, RowRange{0, m.kv_rank, true}}, std::nullopt, m.kv_rank, "kv_a");
        Val k_rope = gemm(h, Weight{kva, RowRange{m.kv_rank, m.rope, true}}, std::nullopt, m.rope, "k_rope");
        Val latent = val(m.kv_rank, "kv_a_norm");
        g_.push(RmsNorm{ckv, plain(n_.layer(i, "self_attn.kv_a_layernorm.weight")), d_.eps, false, m.kv_rank,
                        latent},
                site_);
        g_.push(Rotate{q_rope, m.rope, m.rope, a.theta, a.interleaved, {}}, site_);
        g_.push(Rotate{k_rope, m.rope, m.rope, a.theta, a.interleaved, {}}, site_);
        const W kvb = w(n_.layer(i, "self_attn.kv_b_proj.weight"));
        Val q_latent = val(heads * m.kv_rank, "q_latent");
        g_.push(
            HeadMatmul{q_nope, Weight{kvb, HeadPart{m.nope + m.value, 0, m.nope, false}}, heads, q_latent},
            site_);
        StateId latents = g_.state(KeyCache{1, m.kv_rank});
        StateId ropes = g_.state(KeyCache{1, m.rope});
        g_.push(CacheAppend{latent, latents}, site_);
        g_.push(CacheAppend{k_rope, ropes}, site_);
        Val att = val(heads * m.kv_rank, "attn_latent");
        g_.push(LatentAttendCache{q_latent, q_rope, latents, ropes, heads, m.kv_rank, m.rope,
                                  a.scale.value_or(1.0 / std::sqrt(static_cast<double>(qk))), att},
                site_);
        Val o = val(heads * m.value, "attn");
        g_.push(HeadMatmul{att, Weight{kvb, HeadPart{m.nope + m.value, m.nope, m.value, true}}, heads, o},
                site_);
        residual(
            gemm(o, linear(n_.layer(i, "self_attn.o_proj.weight")), std::nullopt, d_.hidden, "mixer_out"));
    }

    void deltanet(std::size_t i) {
        layer_ = i;
        site_ = Site{i, Part::Mixer};
        const auto& gd = *d_.delta;
        const std::size_t nk = gd.key_heads, nv = gd.value_heads, dk = gd.key_dim, dv = gd.value_dim;
        const std::size_t key = nk * dk, r = nv / nk;
        // On a card of a tensor-parallel plan, its share of the key and value heads (value head h
        // reads key head h / r, so a card's value heads read its own key heads).
        const std::size_t cards = shard_ ? shard_->cards : 1, card = shard_ ? shard_->card : 0;
        const std::size_t nkc = nk / cards, nvc = nv / cards, keyc = nkc * dk, valuec = nvc * dv;
        auto rows_of = [&](const std::string& name, std::size_t first, std::size_t count, bool transpose) {
            if (!shard_)
                return transpose ? linear(name) : plain(name); // the whole tensor, as one card reads it
            return Weight{w(name), RowRange{first, count, transpose}};
        };
        Val h = input_norm(i, "input_layernorm.weight", "mixer_norm");
        Val q, k, v, z, b, a;
        if (gd.grouped) {
            // Qwen3-Next: per key head [q dk | k dk | v r·dv | z r·dv] and [b r | a r]. A card of a
            // tensor-parallel plan takes its key heads' groups (its value heads are theirs).
            const W qkvz = w(n_.layer(i, "linear_attn.in_proj_qkvz.weight"));
            const W ba = w(n_.layer(i, "linear_attn.in_proj_ba.weight"));
            const std::size_t stride = 2 * dk + 2 * r * dv;
            const std::size_t first = shard_ ? card * nkc : 0, groups = shard_ ? nkc : 0; // 0: every head
            auto part = [&](std::size_t s, std::size_t offset, std::size_t width) {
                return HeadPart{s, offset, width, true, first, groups};
            };
            q = gemm(h, Weight{qkvz, part(stride, 0, dk)}, std::nullopt, keyc, "q");
            k = gemm(h, Weight{qkvz, part(stride, dk, dk)}, std::nullopt, keyc, "k");
            v = gemm(h, Weight{qkvz, part(stride, 2 * dk, r * dv)}, std::nullopt, valuec, "v");
            z = gemm(h, Weight{qkvz, part(stride, 2 * dk + r * dv, r * dv)}, std::nullopt, valuec, "z");
            b = gemm(h, Weight{ba, part(2 * r, 0, r)}, std::nullopt, nvc, "b");
            a = gemm(h, Weight{ba, part(2 * r, r, r)}, std::nullopt, nvc, "a");
        } else {
            // Qwen3.5: in_proj_qkv is [q | k | v], one projection after another from its first row.
            const W qkv = w(n_.layer(i, "linear_attn.in_proj_qkv.weight"));
            q = gemm(h, Weight{qkv, RowRange{card * keyc, keyc, true}}, std::nullopt, keyc, "q");
            k = gemm(h, Weight{qkv, RowRange{key + card * keyc, keyc, true}}, std::nullopt, keyc, "k");
            v = gemm(h, Weight{qkv, RowRange{2 * key + card * valuec, valuec, true}}, std::nullopt, valuec,
                     "v");
            z = gemm(h, rows_of(n_.layer(i, "linear_attn.in_proj_z.weight"), card * valuec, valuec, true),
                     std::nullopt, valuec, "z");
            b = gemm(h, rows_of(n_.layer(i, "linear_attn.in_proj_b.weight"), card * nvc, nvc, true),
                     std::nullopt, nvc, "b");
            a = gemm(h, rows_of(n_.layer(i, "linear_attn.in_proj_a.weight"), card * nvc, nvc, true),
                     std::nullopt, nvc, "a");
        }
        // The conv runs over the channels [q | k | v]; each part its own rows of the kernel.
        const W conv = w(n_.layer(i, "linear_attn.conv1d.weight"));
        auto conv_silu = [&](Val x, std::size_t first, std::size_t count, std::string_view what) {
            Val out = val(count, what);
            StateId window = g_.state(ConvWindow{count, gd.kernel});
            g_.push(Conv{x, Weight{conv, RowRange{first, count, false}}, window, out}, site_);
            g_.push(Silu{out, out}, site_);
            return out;
        };
        Val qc = conv_silu(q, card * keyc, keyc, "q_conv");
        Val kc = conv_silu(k, key + card * keyc, keyc, "k_conv");
        Val vc = conv_silu(v, 2 * key + card * valuec, valuec, "v_conv");
        Val ql = val(keyc, "q_l2"), kl = val(keyc, "k_l2");
        g_.push(L2Norm{qc, dk, 1e-6, 1.0 / std::sqrt(static_cast<double>(dk)), ql}, site_);
        g_.push(L2Norm{kc, dk, 1e-6, 1.0, kl}, site_);
        Val beta = val(nvc, "beta"), decay = val(nvc, "g");
        g_.push(GdnGates{b, a, rows_of(n_.layer(i, "linear_attn.A_log"), card * nvc, nvc, false),
                         rows_of(n_.layer(i, "linear_attn.dt_bias"), card * nvc, nvc, false), beta, decay},
                site_);
        StateId state = g_.state(DeltaState{nvc, dk, dv});
        Val o = val(valuec, "delta");
        g_.push(DeltaStep{ql, kl, vc, beta, decay, state, nkc, nvc, dk, dv, o}, site_);
        Val y = val(valuec, "delta_norm");
        g_.push(GatedRmsNorm{o, z, plain(n_.layer(i, "linear_attn.norm.weight")), d_.eps, dv, y}, site_);
        residual(row_parallel(y, n_.layer(i, "linear_attn.out_proj.weight"), valuec, d_.hidden, "mixer_out"));
    }

    void ffn(std::size_t i) {
        layer_ = i;
        site_ = Site{i, Part::Ffn};
        Val h = input_norm(
            i, d_.sandwich_norms ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight",
            "ffn_norm");
        if (d_.layers[i].moe) {
            const auto& m = *d_.moe;
            Moe op;
            op.x = h;
            op.router = linear(n_.layer(i, m.transposed ? "mlp.router.weight" : "mlp.gate.weight"));
            // Expert parallel: this card's E / N experts by index, the shared expert on card i mod N.
            const std::size_t N = shard_ ? shard_->cards : 1, per = m.experts / N;
            const std::size_t first = shard_ ? shard_->card * per : 0, end = first + per;
            const bool shared_here = !shard_ || shard_->card == i % N;
            op.first_expert = first;
            op.all_experts = m.experts;
            if (m.fused) {
                // Expert e's gate is rows e·2I .. e·2I + I of gate_up_proj [E·2I, H], its up the next
                // I rows; its down rows e·H .. (e + 1)·H of down_proj [E·H, I].
                const std::size_t I = m.intermediate, H = d_.hidden;
                const W gate_up = w(n_.layer(i, "mlp.experts.gate_up_proj"));
                const W down = w(n_.layer(i, "mlp.experts.down_proj"));
                for (std::size_t e = first; e < end; ++e) {
                    op.gate.push_back(Weight{gate_up, RowRange{2 * I * e, I, true}});
                    op.up.push_back(Weight{gate_up, RowRange{2 * I * e + I, I, true}});
                    op.down.push_back(Weight{down, RowRange{H * e, H, true}});
                }
            }
            if (m.transposed) {
                // gpt-oss: gate_up_proj [E, H, 2I] multiplies as x · W, expert e's rows e·H .. (e+1)·H,
                // its gate the even columns and its up the odd; down_proj [E, I, H] rows e·I ..; the
                // biases [E, 2I] (interleaved alike) and [E, H].
                const std::size_t I = m.intermediate, H = d_.hidden;
                const W gate_up = w(n_.layer(i, "mlp.experts.gate_up_proj"));
                const W gate_up_bias = w(n_.layer(i, "mlp.experts.gate_up_proj_bias"));
                const W down = w(n_.layer(i, "mlp.experts.down_proj"));
                const W down_bias = w(n_.layer(i, "mlp.experts.down_proj_bias"));
                for (std::size_t e = first; e < end; ++e) {
                    op.gate.push_back(Weight{gate_up, ColumnRange{0, I, false, 2, e * H, H}});
                    op.up.push_back(Weight{gate_up, ColumnRange{1, I, false, 2, e * H, H}});
                    op.down.push_back(Weight{down, RowRange{e * I, I, false}});
                    op.gate_bias.push_back(Weight{gate_up_bias, ColumnRange{0, I, false, 2, e, 1}});
                    op.up_bias.push_back(Weight{gate_up_bias, ColumnRange{1, I, false, 2, e, 1}});
                    op.down_bias.push_back(Weight{down_bias, RowRange{e, 1, false}});
                }
                op.router_bias = plain(n_.layer(i, "mlp.router.bias"));
                op.swiglu_limit = m.swiglu_limit;
                op.swiglu_alpha = m.swiglu_alpha;
            }
            for (std::size_t e = first; !m.fused && !m.transposed && e < end; ++e) {
                op.gate.push_back(linear(n_.layer(i, fmt::format("mlp.experts.{}.gate_proj.weight", e))));
                op.up.push_back(linear(n_.layer(i, fmt::format("mlp.experts.{}.up_proj.weight", e))));
                op.down.push_back(linear(n_.layer(i, fmt::format("mlp.experts.{}.down_proj.weight", e))));
            }
            op.norm_topk_prob = m.norm_topk_prob;
            op.intermediate = m.intermediate;
            if (m.shared_intermediate > 0 && shared_here) {
                op.shared_gate = linear(n_.layer(i, "mlp.shared_expert.gate_proj.weight"));
                op.shared_up = linear(n_.layer(i, "mlp.shared_expert.up_proj.weight"));
                op.shared_down = linear(n_.layer(i, "mlp.shared_expert.down_proj.weight"));
                op.shared_expert_gate = linear(n_.layer(i, "mlp.shared_expert_gate.weight"));
                op.shared_intermediate = m.shared_intermediate;
            }
            op.top_k = m.top_k;
            Val out = val(d_.hidden, "ffn_out");
            if (shard_ && shard_->exchange == Exchange::Exact) { // each card's exact parts, joined
                const Val part = val(d_.hidden * partial_words, "ffn_out_part");
                op.partial = true;
                op.out = part;
                g_.push(std::move(op), site_);
                join(part, out, d_.hidden, "ffn_out");
            } else {
                op.out = out;
                g_.push(std::move(op), site_);
                if (shard_) join(out, out, d_.hidden, "ffn_out");
            }
            residual(out);
            return;
        }
        const std::size_t I = d_.intermediate / (shard_ ? shard_->cards : 1); // this card's columns
        Val gate = gemm(h, share_rows(n_.layer(i, "mlp.gate_proj.weight"), d_.intermediate),
                        bias(d_.mlp_bias, "mlp.gate_proj"), I, "ffn_gate");
        Val up = gemm(h, share_rows(n_.layer(i, "mlp.up_proj.weight"), d_.intermediate),
                      bias(d_.mlp_bias, "mlp.up_proj"), I, "ffn_up");
        Val act = val(I, "ffn_act");
        if (d_.activation == Activation::Silu)
            g_.push(SiluMul{gate, up, act}, site_);
        else
            g_.push(GeluMul{gate, up, d_.activation == Activation::GeluTanh, act}, site_);
        Val down = shard_ ? row_parallel(act, n_.layer(i, "mlp.down_proj.weight"), I, d_.hidden, "ffn_out")
                          : gemm(act, linear(n_.layer(i, "mlp.down_proj.weight")),
                                 bias(d_.mlp_bias, "mlp.down_proj"), d_.hidden, "ffn_out");
        residual(down, "post_feedforward_layernorm.weight", "ffn_out_norm");
    }

    const DecoderSpec& d_;
    const std::map<std::string, W>& t_;
    DecoderNames n_;
    Graph g_;
    Val x_{};
    std::size_t layer_ = 0;
    Site site_;
    std::optional<Shard> shard_;
};

} // namespace

BuiltGraph build_decoder(const DecoderSpec& spec, const std::map<std::string, graph::W>& tensors) {
    return DecoderBuilder(spec, tensors).build();
}

BuiltGraph build_decoder_shard(const DecoderSpec& spec, const std::map<std::string, graph::W>& tensors,
                               const Shard& shard) {
    if (shard.cards < 2 || shard.card >= shard.cards)
        throw Error(
            fmt::format("a tensor-parallel share is card 0 .. cards - 1 of at least two cards, not card "
                        "{} of {}",
                        shard.card, shard.cards));
    return DecoderBuilder(spec, tensors, shard).build();
}

} // namespace cardsim::models
