#include "engine/golden/golden.hpp"

#include "engine/numerics/rotary.hpp"

#include "engine/error.hpp"
#include "engine/kernels/experts.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/kernels/parallel.hpp"

#include <fmt/core.h>

#include <atomic>
#include <cstring>

namespace cardsim::golden {
namespace {

using namespace graph;

/// A key for a constant: its tensor, which stored rows it reads, and whether it is a transposed copy.
std::pair<W, std::string> key(const Weight& w, bool transposed_copy) {
    return {w.tensor, rows_key(w.view) + (transposed_copy ? "T" : "")};
}

} // namespace

Golden::Golden(const Graph& g, const WeightSource& weights, const card::CardConfig& config,
               const Bucket& bucket, std::size_t max_positions, std::optional<std::size_t> slots,
               const program::Image* image)
    : g_(g), weights_(weights), config_(config), bucket_(bucket), max_positions_(max_positions),
      slots_(slots) {
    if (image)
        for (const auto& m : image->matrices)
            if (auto bytes = image->find(m.address, m.bytes); !bytes.empty())
                in_image_.emplace(std::pair{m.tensor, m.rows + (m.transposed ? "T" : "")}, bytes);
    if (auto problem = check(g)) throw Error("the graph is malformed: " + *problem);
    values_.resize(g.vals.size());
    for (auto& s : g.states) {
        auto per_seq = state_bytes(
            s, max_positions,
            [&](std::size_t d) { return kernels::cache_row_bytes(config.numerics.cache, d); },
            kernels::state_element_bytes(config.numerics.state));
        // Each sequence's part padded to kernels::sequence_line, as lowering places it:
        // kernels::sequence_of_row then reads one layout (4 unpadded parts of 144 bytes are also 3
        // padded ones of 192).
        const auto lined =
            (per_seq + kernels::sequence_line - 1) / kernels::sequence_line * kernels::sequence_line;
        states_.emplace_back(lined * (slots ? *slots + 1 : bucket.seqs), std::byte{0});
    }
}

void Golden::prepare() {
    for (const auto& op : g_.ops) {
        if (const auto* e = std::get_if<Embed>(&op)) {
            const auto shape = weights_.view_of(e->table.tensor, e->table.view);
            packed(Weight{e->table.tensor, Whole{true}}, shape.rows, g_.shape(e->out).width);
        } else if (const auto* m = std::get_if<Gemm>(&op); m && !m->partial) {
            packed(m->w, g_.shape(m->out).width, g_.shape(m->a).width);
        }
    }
}

void Golden::use(const Bucket& b) {
    if (!slots_ && b != bucket_)
        throw Error("the golden executor's stores are its bucket's sequences: another bucket needs slots");
    bucket_ = b;
}

const Golden::Packed& Golden::packed(const Weight& w, std::size_t rows, std::size_t cols) {
    bool copy_t = !transposed(w.view);
    auto k = key(w, copy_t);
    if (auto it = packed_.find(k); it != packed_.end()) return it->second;
    auto shape = weights_.view_of(w.tensor, w.view);
    std::size_t r = shape.rows, c = shape.row_len;
    if (copy_t) std::swap(r, c);
    if (r != rows || c != cols)
        throw Error(fmt::format("tensor {}: its view reads {} × {}, the op needs {} × {}",
                                weights_.name(w.tensor), r, c, rows, cols));
    // A transposed copy reads the whole view first (its rows are the stored columns); otherwise rows
    // are read a block at a time as they are packed, and no f32 copy of the matrix is ever made.
    std::vector<float> whole;
    if (copy_t) whole = transpose(weights_.values_f32(w.tensor, w.view), c, r);
    auto layout = kernels::matrix_layout(config_, r, c);
    const std::size_t stride = r ? layout.bytes() / r : 0;
    // Rows pack independently, each into its stride (as lowering packs blocks of them): blocks of
    // about 16 Ki values over the host's cores, each read into a buffer its thread reuses, and
    // either written out or compared with the image's bytes.
    const std::size_t block = std::max<std::size_t>(1, 16384 / std::max<std::size_t>(c, 1));
    auto pack = [&](std::span<std::byte> out, std::span<const std::byte> against) {
        std::atomic<bool> same{true};
        kernels::parallel_for(r, block, [&](std::size_t begin, std::size_t end) {
            std::vector<float> buffer(copy_t ? 0 : std::min(block, end - begin) * c);
            std::vector<std::byte> packed_rows(out.empty() ? std::min(block, end - begin) * stride : 0);
            for (std::size_t first = begin; first < end && same.load(std::memory_order_relaxed);
                 first += block) {
                const std::size_t n = std::min(block, end - first);
                std::span<const float> values;
                if (copy_t) {
                    values = std::span<const float>(whole).subspan(first * c, n * c);
                } else {
                    weights_.read_rows_f32(w.tensor, w.view, first, n, std::span(buffer).first(n * c));
                    values = std::span<const float>(buffer).first(n * c);
                }
                auto to = out.empty() ? std::span(packed_rows).first(n * stride)
                                      : out.subspan(first * stride, n * stride);
                numerics::quantize_into(values, kernels::matrix_layout(config_, n, c), to);
                if (!against.empty() &&
                    std::memcmp(to.data(), against.data() + first * stride, to.size()) != 0)
                    same = false;
            }
        });
        return same.load();
    };
    Packed p{{}, {}, r, c};
    auto in_image = in_image_.find(k);
    if (in_image != in_image_.end() && in_image->second.size() == layout.bytes() &&
        pack({}, in_image->second)) {
        p.bytes = in_image->second; // the image's bytes, checked equal to this packing's
        ++matrices_.from_image;
    } else {
        ++matrices_.own;
        p.own.resize(layout.bytes());
        pack(p.own, {});
    }
    weights_.release(w.tensor); // packed once and kept: the source's pages may go back
    auto& kept = packed_.emplace(k, std::move(p)).first->second;
    if (kept.bytes.empty()) kept.bytes = kept.own; // its own bytes, where they now live
    return kept;
}

const std::vector<float>& Golden::raw(const Weight& w) {
    auto k = key(w, false);
    if (auto it = raw_.find(k); it != raw_.end()) return it->second;
    auto& values = raw_.emplace(k, weights_.values_f32(w.tensor, w.view)).first->second;
    weights_.release(w.tensor);
    return values;
}

const std::vector<std::vector<float>>& Golden::step(const BatchInputs& in,
                                                    const std::function<void(std::size_t op)>& after) {
    routing_.clear();
    for (std::size_t i = 0; i < g_.ops.size(); ++i) {
        run(i, in);
        if (after) after(i);
    }
    return values_;
}

void Golden::run(std::size_t i, const BatchInputs& in) {
    auto rows = [&](Val v) { return bucket_.rows(g_.shape(v).rows); };
    auto width = [&](Val v) { return g_.shape(v).width; };
    // The value `v` as the op writes it: sized to its rows (kept when the op reads it too).
    auto out = [&](Val v) -> std::vector<float>& {
        auto& x = values_[v.id];
        x.resize(rows(v) * width(v), 0.0f);
        return x;
    };
    auto view = [&](const Packed& p) {
        return numerics::MatrixView(kernels::matrix_layout(config_, p.rows, p.cols), p.bytes,
                                    "a golden weight");
    };
    auto ids = [&](const std::vector<std::uint32_t>& v, std::size_t n) {
        return std::span(v).first(std::min(n, v.size()));
    };
    // Each token row's store sequence, under slots (the kernels refuse a slot past the stores).
    auto slot_of = [&](Val v) { return slots_ ? ids(in.slots, rows(v)) : std::span<const std::uint32_t>{}; };
    // Under slots, a recurrent store starts from zeros at a row at position 0 (a new sequence).
    auto start_of = [&](Val v) {
        return slots_ ? ids(in.positions, rows(v)) : std::span<const std::uint32_t>{};
    };
    auto scheme = kernels::activation_scheme(config_.numerics);
    const auto cache = config_.numerics.cache;
    std::visit(
        [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, Embed>) {
                auto shape = weights_.view_of(o.table.tensor, o.table.view);
                auto& p = packed(Weight{o.table.tensor, Whole{true}}, shape.rows, width(o.out));
                kernels::embed(view(p), ids(in.ids, rows(o.out)), out(o.out));
            } else if constexpr (std::is_same_v<T, LayerNorm>) {
                std::vector<float> b = o.b ? raw(*o.b) : std::vector<float>{};
                auto x = values_[o.x.id];
                kernels::layer_norm(x, raw(o.w), b, width(o.x), o.eps, out(o.out));
            } else if constexpr (std::is_same_v<T, Gemm>) {
                if (o.partial) // one card's share of a tensor-parallel model: the golden runs the whole
                    throw Error(fmt::format("op {} (a partial Gemm): the golden executor runs the whole "
                                            "model's graph, not a tensor-parallel card's",
                                            i));
                auto& p = packed(o.w, width(o.out), width(o.a));
                std::vector<float> b = o.b ? raw(*o.b) : std::vector<float>{};
                auto a = values_[o.a.id];
                kernels::matvec(view(p), a, scheme, o.epilogue, b, out(o.out));
            } else if constexpr (std::is_same_v<T, Rope>) {
                kernels::rope(out(o.qkv), o.heads, o.head_dim, o.theta, ids(in.positions, rows(o.qkv)));
            } else if constexpr (std::is_same_v<T, Attention>) {
                kernels::self_attention(values_[o.qkv.id], o.heads, o.head_dim, o.window.value_or(0),
                                        ids(in.seq_starts, bucket_.seqs + 1), out(o.out));
            } else if constexpr (std::is_same_v<T, GeGlu>) {
                auto x = values_[o.x.id];
                kernels::geglu(x, width(o.out), out(o.out));
            } else if constexpr (std::is_same_v<T, AddType>) {
                kernels::add_type(out(o.h), raw(o.table), width(o.h), ids(in.qtype, bucket_.seqs),
                                  ids(in.seq_starts, bucket_.seqs + 1));
            } else if constexpr (std::is_same_v<T, GatherMarkers>) {
                auto h = values_[o.h.id];
                kernels::gather_markers(h, width(o.h), ids(in.marker_rows, rows(o.out)), out(o.out));
            } else if constexpr (std::is_same_v<T, ActFeatures>) {
                auto h = values_[o.h.id];
                auto l = values_[o.logits.id];
                kernels::act_features(h, width(o.h), l, ids(in.seq_starts, bucket_.seqs + 1),
                                      ids(in.marker_starts, bucket_.seqs + 1), out(o.out));
            } else if constexpr (std::is_same_v<T, RmsNorm>) {
                std::vector<float> w = o.w ? raw(*o.w) : std::vector<float>{};
                auto x = values_[o.x.id];
                kernels::rms_norm(x, w, o.group, o.eps, o.zero_centred, out(o.out));
            } else if constexpr (std::is_same_v<T, Rotate>) {
                if (o.interleaved)
                    throw Error(fmt::format("op {} (Rotate): no unit rotates interleaved pairs", i));
                if (o.yarn) {
                    const auto& y = *o.yarn;
                    const auto freqs = numerics::yarn_frequencies(
                        o.rotary_dim, o.theta,
                        {y.factor, y.beta_fast, y.beta_slow, y.original_max, y.truncate});
                    kernels::rotate_scaled(out(o.x), width(o.x), o.head_dim, o.rotary_dim, freqs,
                                           static_cast<float>(y.attention_factor),
                                           ids(in.positions, rows(o.x)));
                } else {
                    kernels::rotate(out(o.x), width(o.x), o.head_dim, o.rotary_dim, o.theta,
                                    ids(in.positions, rows(o.x)));
                }
            } else if constexpr (std::is_same_v<T, CacheAppend>) {
                auto [heads, dim] = std::visit(
                    [](const auto& st) -> std::pair<std::size_t, std::size_t> {
                        if constexpr (requires { st.kv_heads; })
                            return {st.kv_heads, st.head_dim};
                        else
                            return {0, 0};
                    },
                    g_.states[o.cache.id]);
                kernels::cache_append(values_[o.x.id], heads, dim, max_positions_, cache,
                                      ids(in.positions, rows(o.x)), states_[o.cache.id], slot_of(o.x));
            } else if constexpr (std::is_same_v<T, AttendCache>) {
                std::vector<float> sinks = o.sinks ? raw(*o.sinks) : std::vector<float>{};
                kernels::attend(values_[o.q.id], o.heads, o.kv_heads, o.head_dim, max_positions_,
                                o.window.value_or(0), o.scale, o.softcap.value_or(0.0), sinks, cache,
                                config_.numerics.attention, kernels::attention_query_scheme(config_.numerics),
                                ids(in.positions, rows(o.q)), states_[o.keys.id], states_[o.values.id],
                                out(o.out), slot_of(o.q));
            } else if constexpr (std::is_same_v<T, Conv>) {
                auto& win = std::get<ConvWindow>(g_.states[o.window.id]);
                auto x = values_[o.x.id];
                kernels::conv(x, raw(o.w), win.channels, win.kernel, false, states_[o.window.id], out(o.out),
                              slot_of(o.x), start_of(o.x));
            } else if constexpr (std::is_same_v<T, Silu>) {
                auto x = values_[o.x.id];
                kernels::silu(x, out(o.out));
            } else if constexpr (std::is_same_v<T, L2Norm>) {
                auto x = values_[o.x.id];
                kernels::l2_norm(x, o.group, o.eps, o.scale, out(o.out));
            } else if constexpr (std::is_same_v<T, GdnGates>) {
                auto b = values_[o.b.id], a = values_[o.a.id];
                kernels::gates(b, a, raw(o.a_log), raw(o.dt_bias), out(o.beta), out(o.g));
            } else if constexpr (std::is_same_v<T, DeltaStep>) {
                kernels::delta_step(values_[o.q.id], values_[o.k.id], values_[o.v.id], values_[o.beta.id],
                                    values_[o.g.id], o.key_heads, o.value_heads, o.dk, o.dv,
                                    config_.numerics.state, states_[o.state.id], out(o.out), slot_of(o.q),
                                    start_of(o.q));
            } else if constexpr (std::is_same_v<T, GatedRmsNorm>) {
                auto x = values_[o.x.id], z = values_[o.z.id];
                kernels::gated_norm(x, z, raw(o.w), o.group, o.eps, out(o.out));
            } else if constexpr (std::is_same_v<T, SigmoidGate>) {
                auto x = values_[o.x.id], g = values_[o.gate.id];
                kernels::sigmoid_gate(x, g, out(o.out));
            } else if constexpr (std::is_same_v<T, SiluMul>) {
                auto a = values_[o.gate.id], b = values_[o.up.id];
                kernels::silu_mul(a, b, out(o.out));
            } else if constexpr (std::is_same_v<T, Add>) {
                auto a = values_[o.a.id], b = values_[o.b.id];
                kernels::add(a, b, out(o.out));
            } else if constexpr (std::is_same_v<T, ArgMax>) {
                auto x = values_[o.x.id];
                kernels::argmax(x, width(o.x), out(o.out));
            } else if constexpr (std::is_same_v<T, Gelu>) {
                auto x = values_[o.x.id];
                kernels::gelu(x, out(o.out));
            } else if constexpr (std::is_same_v<T, Moe>) {
                if (o.partial || o.routed() != o.gate.size())
                    throw Error(fmt::format("op {} (Moe of experts {} .. {} of {}): the golden executor runs "
                                            "the whole model's graph, not an expert-parallel card's",
                                            i, o.first_expert, o.first_expert + o.gate.size(), o.routed()));
                out(o.out);
                moe(o, rows(o.x));
            } else {
                throw Error(fmt::format("op {} ({}): no unit computes it", i, kind(g_.ops[i])));
            }
        },
        g_.ops[i]);
}

void Golden::moe(const Moe& o, std::size_t rows) {
    const std::size_t H = g_.shape(o.x).width, E = o.gate.size(), k = o.top_k, I = o.intermediate;
    const std::size_t J = o.shared_intermediate;
    auto scheme = kernels::activation_scheme(config_.numerics);
    auto view = [&](const Packed& p) {
        return numerics::MatrixView(kernels::matrix_layout(config_, p.rows, p.cols), p.bytes,
                                    "a golden weight");
    };
    auto product = [&](const Weight& w, std::size_t n, std::span<const float> x, std::span<float> y) {
        kernels::matvec(view(packed(w, n, H)), x, scheme, Epilogue::None, {}, y);
    };
    const auto& x = values_[o.x.id];
    std::vector<float> logits(rows * E), weights(rows * k);
    std::vector<std::uint32_t> chosen(rows * k);
    if (o.router_bias)
        kernels::matvec(view(packed(o.router, E, H)), x, scheme, Epilogue::None, raw(*o.router_bias), logits);
    else
        product(o.router, E, x, logits);
    kernels::route(logits, E, o.norm_topk_prob ? numerics::RouterNorm::TopK : numerics::RouterNorm::All,
                   chosen, weights);
    auto experts = [&](const std::vector<Weight>& list, std::size_t n, std::size_t cols) {
        const auto* l = &list;
        return [&, l, n, cols](std::uint32_t e) {
            if (e >= E) throw Error(fmt::format("the router chose expert {} of {}", e, E));
            return view(packed((*l)[e], n, cols));
        };
    };
    // gpt-oss's biases: every expert's, one after another.
    auto biases = [&](const std::vector<Weight>& list) {
        std::vector<float> all;
        for (auto& b : list) {
            const auto& v = raw(b);
            all.insert(all.end(), v.begin(), v.end());
        }
        return all;
    };
    const auto gate_b = biases(o.gate_bias), up_b = biases(o.up_bias), down_b = biases(o.down_bias);
    std::vector<float> gate(rows * k * I), up(rows * k * I), act(rows * k * I), outs(rows * k * H);
    kernels::expert_matvec(experts(o.gate, I, H), x, chosen, k, false, scheme, gate, {}, gate_b);
    kernels::expert_matvec(experts(o.up, I, H), x, chosen, k, false, scheme, up, {}, up_b);
    if (o.swiglu_limit)
        kernels::swiglu_clamp(gate, up, static_cast<float>(*o.swiglu_limit),
                              static_cast<float>(o.swiglu_alpha), act);
    else
        kernels::silu_mul(gate, up, act);
    kernels::expert_matvec(experts(o.down, H, I), act, chosen, k, true, scheme, outs, {}, down_b);
    std::vector<float> shared, logit;
    if (J > 0) {
        std::vector<float> sg(rows * J), su(rows * J), sa(rows * J);
        product(*o.shared_gate, J, x, sg);
        product(*o.shared_up, J, x, su);
        kernels::silu_mul(sg, su, sa);
        shared.resize(rows * H);
        kernels::matvec(view(packed(*o.shared_down, H, J)), sa, scheme, Epilogue::None, {}, shared);
        if (!o.shared_expert_gate)
            throw Error("a shared expert without its sigmoid gate: no unit combines it");
        logit.resize(rows);
        product(*o.shared_expert_gate, 1, x, logit);
    }
    auto& y = values_[o.out.id];
    kernels::combine(weights, outs, shared, logit, k, std::span(y).first(rows * H));
    routing_.push_back(std::move(chosen));
}

} // namespace cardsim::golden
