#include "engine/lower/lower.hpp"

#include "engine/error.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/lower/dependencies.hpp"
#include "engine/program/epilogue.hpp"
#include "engine/program/slots.hpp"
#include "engine/shim/check.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <tuple>

namespace cardsim::lower {
namespace {

using namespace graph;
using program::Access;
using program::Chunk;
using program::Command;
namespace slots = program::slots;
using program::Place;
using program::Region;

constexpr std::uint64_t line = 64; ///< every placement starts on a 64-byte line

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
    return a ? (v + a - 1) / a * a : v;
}

/// How a constant is stored: packed in the weight format, or as raw f32.
enum class Storing { Packed, PackedTransposed, RawF32 };

/// The host map entry of an io place.
program::IoEntry entry(program::IoRole role, const Place& p) {
    program::IoEntry e;
    e.role = role;
    e.offset = p.offset;
    e.bytes = p.bytes;
    return e;
}

/// What the buckets of a set share (lower_set): the io region and the arena sized for the largest
/// bucket, and one program area holding every bucket's commands, this bucket's at `program_offset`.
struct SetShare {
    std::uint64_t io_bytes = 0, arena_bytes = 0, program_offset = 0, programs_bytes = 0;
};

class Lowering {
public:
    Lowering(const Graph& g, const WeightSource& ws, const Target& t, const Options& o,
             bool refuse_over_capacity = true, const SetShare* share = nullptr)
        : g_(g), ws_(ws), t_(t), o_(o), refuse_over_capacity_(refuse_over_capacity), share_(share) {}

    Compiled run() {
        refuse_what_the_card_cannot_run();
        out_.options = o_;
        out_.layout = layout(g_, o_.bucket);
        if (auto why = arena_refusal(g_, o_.bucket, t_.sram_bytes)) throw Refusal(*why);
        for (auto& p : o_.probes)
            if (auto problem = check(g_, p)) throw Error("cannot observe a value: " + *problem);
        place_states();
        place_io();
        auto fusion = shim::fuse(g_, t_.caps);
        for (auto& grp : fusion.groups)
            emit(grp);
        copy_outputs();
        add_dependencies(out_.program);
        map_regions(); // refuses a program over the card's DDR before any weight is read
        run_jobs();
        out_.program.image_digest = digest(out_.image);
        describe_host();
        return std::move(out_);
    }

private:
    const Graph& g_;
    const WeightSource& ws_;
    const Target& t_;
    Options o_;
    bool refuse_over_capacity_ = true;
    const SetShare* share_ = nullptr;
    Compiled out_;
    std::uint64_t weights_end_ = 0, caches_end_ = 0, state_end_ = 0, io_end_ = 0;
    std::map<std::tuple<W, std::string, Storing>, Place> weights_;
    /// A weight chunk to fill: its index in the image, its reserved size, how to make its bytes.
    struct Job {
        std::size_t chunk;
        std::uint64_t bytes;
        std::function<std::vector<std::byte>()> make;
    };
    std::vector<Job> jobs_;

    void refuse_what_the_card_cannot_run() {
        if (auto problem = check(g_)) throw Error("the graph is malformed: " + *problem);
        auto report = shim::check_model(g_, t_.caps);
        if (report.runs()) return;
        std::string why = "the card refuses this model:";
        for (auto& r : report.refusals)
            why += "\n  " + r.text();
        throw Error(why);
    }

    std::size_t rows(Val v) const { return o_.bucket.rows(g_.shape(v).rows); }
    std::size_t width(Val v) const { return g_.shape(v).width; }
    /// The arena bytes of `v`.
    Place arena(Val v) const {
        return Place{Region::Arena, 4 * out_.layout.offsets[v.id], 4 * rows(v) * width(v)};
    }

    /// The operand at place `p` (its access comes from the command's slot).
    static program::Operand on(const Place& p) { return {p.region, Access::Read, p.offset, p.bytes}; }
    /// An absent optional operand.
    static program::Operand absent() { return {}; }

    // ---- placement ----

    void place_states() {
        const std::size_t seqs = store_sequences();
        for (auto& s : g_.states) {
            const bool cache = std::holds_alternative<KeyCache>(s) || std::holds_alternative<ValueCache>(s);
            const Region region = cache ? Region::Caches : Region::State;
            const std::uint64_t per_seq =
                state_bytes(s, o_.max_positions, t_.storage.cache_row_bytes, t_.storage.state_element_bytes);
            auto& end = region == Region::Caches ? caches_end_ : state_end_;
            Place p{region, end, align_up(per_seq, line) * seqs};
            end = align_up(end + p.bytes, line);
            out_.states.push_back(p);
        }
    }

    /// The sequences every store is laid out for: the bucket's, or the slots and the pad slot.
    std::size_t store_sequences() const { return o_.slots ? *o_.slots + 1 : o_.bucket.seqs; }
    /// The `slots` operand of a stateful command: the io slots under slots, else absent.
    program::Operand slots_operand() const { return o_.slots ? on(out_.io.slots) : absent(); }
    /// The `positions` operand of a recurrent command (Conv, DeltaStep): the io positions under
    /// slots (a row at position 0 starts its slot's sequence from a zero store), else absent.
    program::Operand start_positions_operand() const { return o_.slots ? on(out_.io.positions) : absent(); }

    Place io(std::uint64_t bytes) {
        Place p{Region::Io, io_end_, bytes};
        io_end_ = align_up(io_end_ + bytes, line);
        return p;
    }

    void place_io() {
        auto& b = o_.bucket;
        auto& m = out_.io;
        m.ids = io(4 * b.tokens);
        m.positions = io(4 * b.tokens);
        m.seq_starts = io(4 * (b.seqs + 1));
        m.qtype = io(4 * b.seqs);
        m.marker_rows = io(4 * b.markers);
        m.marker_starts = io(4 * (b.seqs + 1));
        if (o_.slots) {
            if (*o_.slots == 0 || *o_.slots >= 0xffffffffu)
                throw Error(fmt::format("slots = {}: expected 1 .. 2^32 - 2", *o_.slots));
            m.slots = io(4 * b.tokens);
            m.slot_count = *o_.slots;
        }
        for (auto v : g_.outputs())
            m.outputs.emplace_back(v, io(4 * rows(v) * width(v)));
        for (auto& p : o_.probes) {
            m.outputs.emplace_back(p.value, io(4 * rows(p.value) * width(p.value)));
            m.probes.push_back(p);
        }
    }

    /// Reserves `bytes` in the weights region at the next stripe (matrices) or line (raw constants),
    /// to be filled by `make` when the jobs run (in parallel, after every command is emitted).
    Place reserve(std::uint64_t bytes, bool stripe, std::function<std::vector<std::byte>()> make) {
        std::uint64_t at = align_up(weights_end_, stripe ? t_.stripe() : line);
        Place p{Region::Weights, at, bytes};
        weights_end_ = at + bytes;
        if (o_.shapes_only) return p;               // placed by its shape and format: never read nor packed
        out_.image.chunks.push_back(Chunk{at, {}}); // the region's base is 0
        jobs_.push_back(Job{out_.image.chunks.size() - 1, bytes, std::move(make)});
        return p;
    }

    /// Fills every reserved chunk, the checkpoint reads and the quantisation spread over the host's
    /// threads (`kernels::parallel_for`, which honours CARDSIM_HOST_THREADS). Deterministic: each job
    /// writes its own chunk; the first failure (in job order) is rethrown.
    void run_jobs() {
        std::vector<std::exception_ptr> errors(jobs_.size());
        kernels::parallel_for(jobs_.size(), 1, [&](std::size_t begin, std::size_t end) {
            for (std::size_t j = begin; j < end; ++j) {
                try {
                    auto bytes = jobs_[j].make();
                    if (bytes.size() != jobs_[j].bytes)
                        throw Error(fmt::format("a packed weight has {} bytes, {} were reserved",
                                                bytes.size(), jobs_[j].bytes));
                    out_.image.chunks[jobs_[j].chunk].bytes = std::move(bytes);
                } catch (...) {
                    errors[j] = std::current_exception();
                }
            }
        });
        for (auto& e : errors)
            if (e) std::rethrow_exception(e);
    }

    /// The values `view` reads of `tensor`, transposed when `transpose_copy`.
    std::vector<float> values_of(const Weight& w, bool transpose_copy) const {
        auto shape = ws_.view_of(w.tensor, w.view);
        auto values = ws_.values_f32(w.tensor, w.view);
        ws_.release(w.tensor); // packed once: its mapped pages need not stay resident
        if (!transpose_copy) return values;
        return transpose(values, shape.rows, shape.row_len);
    }

    /// The weights-region bytes of `w` stored as `how`, placing them the first time.
    Place weight(const Weight& w, Storing how, std::size_t want_rows, std::size_t want_cols) {
        auto key = std::make_tuple(w.tensor, rows_key(w.view), how);
        if (auto it = weights_.find(key); it != weights_.end()) return it->second;
        auto shape = ws_.view_of(w.tensor, w.view);
        std::size_t r = shape.rows, c = shape.row_len;
        if (how == Storing::PackedTransposed) std::swap(r, c);
        if (r * c != want_rows * want_cols || (how != Storing::RawF32 && (r != want_rows || c != want_cols)))
            throw Error(fmt::format("tensor {}: its view reads {} × {}, the op needs {} × {}",
                                    ws_.name(w.tensor), r, c, want_rows, want_cols));
        bool t = how == Storing::PackedTransposed;
        Place p = how == Storing::RawF32
                      ? reserve(4 * r * c, false, [this, w] { return raw(values_of(w, false)); })
                      : reserve(t_.storage.packed_bytes(r, c), true,
                                [this, w, t, r, c] { return t_.storage.pack(values_of(w, t), r, c); });
        weights_.emplace(key, p);
        return p;
    }

    static std::vector<std::byte> raw(std::span<const float> v) {
        std::vector<std::byte> b(4 * v.size());
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    }

    Place raw_weight(const Weight& w, std::size_t n) { return weight(w, Storing::RawF32, n, 1); }
    Place matrix(const Weight& w, std::size_t n, std::size_t k) {
        return weight(w, transposed(w.view) ? Storing::Packed : Storing::PackedTransposed, n, k);
    }

    // ---- commands ----

    /// Appends a command of opcode `S` for graph op `graph_op` (the graph's op count for copies
    /// that belong to no op), its slots filled by name; each present operand takes its slot's access.
    template <class S>
    void put(std::size_t graph_op, const typename S::template Each<program::Operand>& operands,
             const typename S::Dims& dims, const typename S::Params& params = {}, std::uint32_t flags = 0) {
        Command c;
        c.unit = program::spec(S::opcode).unit;
        c.flags = flags;
        program::fill<S>(c, operands, dims, params);
        out_.program.commands.push_back(std::move(c));
        out_.op_of.push_back(graph_op);
    }

    void need_decode_rows(std::size_t i) const {
        if (o_.slots) return; // each row names its store sequence
        if (o_.bucket.seqs == 0 || o_.bucket.tokens % o_.bucket.seqs != 0)
            throw Error(
                fmt::format("op {} ({}) reads a cache or state: a step takes the same number of tokens of "
                            "every sequence, and the bucket has {} tokens for {} sequences",
                            i, kind(g_.ops[i]), o_.bucket.tokens, o_.bucket.seqs));
    }

    void emit(const shim::Group& grp) {
        bool native = grp.cls && std::holds_alternative<shim::Native>(shim::supports(*grp.cls, t_.caps));
        bool merged =
            native && (*grp.cls == shim::ClassId::MergedQkv || *grp.cls == shim::ClassId::ConvBiasSilu);
        if (merged) {
            if (*grp.cls == shim::ClassId::MergedQkv)
                merged_matvec(grp);
            else
                conv(grp.ops[0], &std::get<Silu>(g_.ops[grp.ops[1]]));
            for (std::size_t k = 0; k < grp.ops.size(); ++k)
                copy_probes(grp.ops[k], std::span(grp.ops).subspan(k + 1));
            return;
        }
        for (auto i : grp.ops) {
            single(i);
            copy_probes(i, {});
        }
    }

    void merged_matvec(const shim::Group& grp) {
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
        auto w = reserve(t_.storage.packed_bytes(n, k), true, [this, views, n, k] {
            std::vector<float> values;
            for (auto& v : views) {
                auto part = ws_.values_f32(v.tensor, v.view);
                values.insert(values.end(), part.begin(), part.end());
            }
            for (auto& v : views)
                ws_.release(v.tensor);
            return t_.storage.pack(values, n, k);
        });
        auto part = [&](std::size_t p) {
            return p < grp.ops.size() ? on(arena(std::get<Gemm>(g_.ops[grp.ops[p]]).out)) : absent();
        };
        put<slots::Matvec>(
            grp.ops.front(),
            {.x = on(arena(first.a)), .w = on(w), .out = part(0), .out2 = part(1), .out3 = part(2)},
            {.rows = rows(first.a), .n = n, .k = k, .n1 = parts[0], .n2 = parts.size() > 1 ? parts[1] : 0});
    }

    void conv(std::size_t i, const Silu* silu) {
        auto& o = std::get<Conv>(g_.ops[i]);
        need_decode_rows(i);
        auto& window = std::get<ConvWindow>(g_.states[o.window.id]);
        put<slots::Conv>(i,
                         {.x = on(arena(o.x)),
                          .w = on(raw_weight(o.w, window.channels * window.kernel)),
                          .window = on(out_.states[o.window.id]),
                          .out = on(arena(silu ? silu->out : o.out)),
                          .positions = start_positions_operand(),
                          .slots = slots_operand()},
                         {.rows = rows(o.x), .channels = window.channels, .kernel = window.kernel}, {},
                         silu ? program::flag::FusedSilu : 0);
    }

    void single(std::size_t i) {
        std::visit([&](const auto& o) { emit_op(i, o); }, g_.ops[i]);
    }

    void emit_op(std::size_t i, const Embed& o) {
        auto shape = ws_.view_of(o.table.tensor, o.table.view);
        put<slots::Embed>(i,
                          {.table = on(matrix(Weight{o.table.tensor, Whole{true}}, shape.rows, width(o.out))),
                           .ids = on(out_.io.ids),
                           .out = on(arena(o.out))},
                          {.rows = rows(o.out), .width = width(o.out)});
    }
    void emit_op(std::size_t i, const LayerNorm& o) {
        put<slots::LayerNorm>(i,
                              {.x = on(arena(o.x)),
                               .w = on(raw_weight(o.w, width(o.x))),
                               .b = o.b ? on(raw_weight(*o.b, width(o.x))) : absent(),
                               .out = on(arena(o.out))},
                              {.rows = rows(o.x), .width = width(o.x)}, {.eps = o.eps});
    }
    void emit_op(std::size_t i, const Gemm& o) {
        std::size_t n = width(o.out), k = width(o.a);
        put<slots::Matvec>(i,
                           {.x = on(arena(o.a)),
                            .w = on(matrix(o.w, n, k)),
                            .b = o.b ? on(raw_weight(*o.b, n)) : absent(),
                            .out = on(arena(o.out))},
                           {.rows = rows(o.a), .n = n, .k = k, .n1 = n, .n2 = 0}, {},
                           program::epilogue_flags(o.epilogue));
    }
    void emit_op(std::size_t i, const Rope& o) {
        put<slots::Rope>(i, {.x = on(arena(o.qkv)), .positions = on(out_.io.positions)},
                         {.rows = rows(o.qkv), .heads = o.heads, .head_dim = o.head_dim}, {.theta = o.theta});
    }
    void emit_op(std::size_t i, const Attention& o) {
        put<slots::SelfAttention>(
            i, {.qkv = on(arena(o.qkv)), .seq_starts = on(out_.io.seq_starts), .out = on(arena(o.out))},
            {.rows = rows(o.qkv),
             .seqs = o_.bucket.seqs,
             .heads = o.heads,
             .head_dim = o.head_dim,
             .window = o.window.value_or(0)});
    }
    void emit_op(std::size_t i, const GeGlu& o) { unary<slots::GeGlu>(i, o.x, o.out, width(o.out)); }
    void emit_op(std::size_t i, const AddType& o) {
        auto shape = ws_.view_of(o.table.tensor, o.table.view);
        put<slots::AddType>(i,
                            {.h = on(arena(o.h)),
                             .table = on(raw_weight(o.table, shape.numel())),
                             .qtype = on(out_.io.qtype),
                             .seq_starts = on(out_.io.seq_starts)},
                            {.rows = rows(o.h), .seqs = o_.bucket.seqs, .width = width(o.h)});
    }
    void emit_op(std::size_t i, const GatherMarkers& o) {
        put<slots::GatherMarkers>(
            i, {.h = on(arena(o.h)), .marker_rows = on(out_.io.marker_rows), .out = on(arena(o.out))},
            {.markers = rows(o.out), .width = width(o.out)});
    }
    void emit_op(std::size_t i, const ActFeatures& o) {
        put<slots::ActFeatures>(i,
                                {.h = on(arena(o.h)),
                                 .logits = on(arena(o.logits)),
                                 .seq_starts = on(out_.io.seq_starts),
                                 .marker_starts = on(out_.io.marker_starts),
                                 .out = on(arena(o.out))},
                                {.seqs = o_.bucket.seqs, .markers = o_.bucket.markers, .width = width(o.h)});
    }
    void emit_op(std::size_t i, const RmsNorm& o) {
        put<slots::RmsNorm>(i,
                            {.x = on(arena(o.x)),
                             .w = o.w ? on(raw_weight(*o.w, o.group)) : absent(),
                             .out = on(arena(o.out))},
                            {.rows = rows(o.x), .width = width(o.x), .group = o.group}, {.eps = o.eps},
                            o.zero_centred ? program::flag::ZeroCentred : 0);
    }
    void emit_op(std::size_t i, const Rotate& o) {
        if (o.interleaved)
            throw Error(
                fmt::format("op {} (Rotate): interleaved rotary pairs have no command on this card", i));
        put<slots::Rotate>(i, {.x = on(arena(o.x)), .positions = on(out_.io.positions)},
                           {.rows = rows(o.x),
                            .heads = width(o.x) / o.head_dim,
                            .head_dim = o.head_dim,
                            .rotary_dim = o.rotary_dim},
                           {.theta = o.theta});
    }
    void emit_op(std::size_t i, const CacheAppend& o) {
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
    void emit_op(std::size_t i, const AttendCache& o) {
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
    void emit_op(std::size_t i, const Conv&) { conv(i, nullptr); }
    void emit_op(std::size_t i, const Silu& o) { unary<slots::Silu>(i, o.x, o.out, width(o.x)); }
    void emit_op(std::size_t i, const L2Norm& o) {
        put<slots::L2Norm>(i, {.x = on(arena(o.x)), .out = on(arena(o.out))},
                           {.rows = rows(o.x), .width = width(o.x), .group = o.group},
                           {.eps = o.eps, .scale = o.scale});
    }
    void emit_op(std::size_t i, const GdnGates& o) {
        std::size_t h = width(o.b);
        put<slots::Gates>(i,
                          {.b = on(arena(o.b)),
                           .a = on(arena(o.a)),
                           .a_log = on(raw_weight(o.a_log, h)),
                           .dt_bias = on(raw_weight(o.dt_bias, h)),
                           .beta = on(arena(o.beta)),
                           .g = on(arena(o.g))},
                          {.rows = rows(o.b), .heads = h});
    }
    void emit_op(std::size_t i, const DeltaStep& o) {
        need_decode_rows(i);
        put<slots::DeltaStep>(i,
                              {.q = on(arena(o.q)),
                               .k = on(arena(o.k)),
                               .v = on(arena(o.v)),
                               .beta = on(arena(o.beta)),
                               .g = on(arena(o.g)),
                               .state = on(out_.states[o.state.id]),
                               .out = on(arena(o.out)),
                               .positions = start_positions_operand(),
                               .slots = slots_operand()},
                              {.rows = rows(o.q),
                               .key_heads = o.key_heads,
                               .value_heads = o.value_heads,
                               .dk = o.dk,
                               .dv = o.dv});
    }
    void emit_op(std::size_t i, const GatedRmsNorm& o) {
        put<slots::GatedNorm>(i,
                              {.x = on(arena(o.x)),
                               .z = on(arena(o.z)),
                               .w = on(raw_weight(o.w, o.group)),
                               .out = on(arena(o.out))},
                              {.rows = rows(o.x), .width = width(o.x), .group = o.group}, {.eps = o.eps});
    }
    void emit_op(std::size_t i, const SigmoidGate& o) {
        put<slots::SigmoidGate>(i, {.x = on(arena(o.x)), .gate = on(arena(o.gate)), .out = on(arena(o.out))},
                                {.rows = rows(o.x), .width = width(o.x)});
    }
    void emit_op(std::size_t i, const SiluMul& o) {
        put<slots::SiluMul>(i, {.gate = on(arena(o.gate)), .up = on(arena(o.up)), .out = on(arena(o.out))},
                            {.rows = rows(o.gate), .width = width(o.gate)});
    }
    void emit_op(std::size_t i, const Add& o) {
        put<slots::Add>(i, {.a = on(arena(o.a)), .b = on(arena(o.b)), .out = on(arena(o.out))},
                        {.rows = rows(o.a), .width = width(o.a)});
    }
    void emit_op(std::size_t i, const ArgMax& o) { unary<slots::ArgMax>(i, o.x, o.out, width(o.x)); }
    void emit_op(std::size_t i, const Gelu& o) { unary<slots::Gelu>(i, o.x, o.out, width(o.x)); }
    template <class T>
    void emit_op(std::size_t i, const T&) {
        throw Error(fmt::format("op {} ({}) has no command on this card", i, kind(g_.ops[i])));
    }

    /// A one-input elementwise command (`x`, `out`; `rows`, `width`).
    template <class S>
    void unary(std::size_t i, Val x, Val out, std::size_t w) {
        put<S>(i, {.x = on(arena(x)), .out = on(arena(out))}, {.rows = rows(x), .width = w});
    }

    std::pair<std::size_t, std::size_t> cache_shape(StateId s) const {
        if (auto* k = std::get_if<KeyCache>(&g_.states[s.id])) return {k->kv_heads, k->head_dim};
        auto& v = std::get<ValueCache>(g_.states[s.id]);
        return {v.kv_heads, v.head_dim};
    }

    /// Copies each probe that stands after op `op` to its io place, right after the command that ran
    /// it (with the ops `same_command`, which must not write the value again): the dependencies make
    /// the copy wait for that command and make later writers of those arena bytes wait for it.
    void copy_probes(std::size_t op, std::span<const std::size_t> same_command) {
        auto& m = out_.io;
        for (std::size_t k = 0; k < m.probes.size(); ++k) {
            auto& p = m.probes[k];
            if (p.after != op) continue;
            for (auto later : same_command) {
                auto w = uses(g_.ops[later]).writes;
                if (std::find(w.begin(), w.end(), p.value) != w.end())
                    throw Error(
                        fmt::format("cannot observe {} after op {}: op {} ({}) runs in the same command "
                                    "and writes it again",
                                    g_.names[p.value.id], p.after, later, kind(g_.ops[later])));
            }
            put<slots::Copy>(g_.ops.size(),
                             {.src = on(arena(p.value)), .dst = on(m.outputs[m.graph_outputs() + k].second)},
                             {});
        }
    }

    void copy_outputs() {
        auto& m = out_.io;
        for (std::size_t k = 0; k < m.graph_outputs(); ++k) {
            auto& [v, place] = m.outputs[k];
            put<slots::Copy>(g_.ops.size(), {.src = on(arena(v)), .dst = on(place)}, {});
        }
    }

    /// The host map: the bucket, the ids the embedding takes, every io place with its role.
    void describe_host() {
        using program::IoRole;
        auto& h = out_.program.host;
        h.checkpoint_digest = o_.checkpoint_digest;
        h.model = o_.model;
        h.tokens = o_.bucket.tokens;
        h.seqs = o_.bucket.seqs;
        h.markers = o_.bucket.markers;
        h.max_positions = o_.max_positions;
        for (auto& op : g_.ops)
            if (auto* e = std::get_if<Embed>(&op)) h.vocab = ws_.view_of(e->table.tensor, e->table.view).rows;
        auto& m = out_.io;
        for (auto [role, place] :
             {std::pair{IoRole::Ids, &m.ids}, std::pair{IoRole::Positions, &m.positions},
              std::pair{IoRole::SeqStarts, &m.seq_starts}, std::pair{IoRole::Qtype, &m.qtype},
              std::pair{IoRole::MarkerRows, &m.marker_rows},
              std::pair{IoRole::MarkerStarts, &m.marker_starts}})
            h.io.push_back(entry(role, *place));
        if (o_.slots) {
            auto e = entry(IoRole::Slots, m.slots);
            e.width = *o_.slots;
            h.io.push_back(e);
        }
        for (std::size_t k = 0; k < m.outputs.size(); ++k) {
            auto [v, place] = m.outputs[k];
            bool probe = k >= m.graph_outputs();
            auto e = entry(probe            ? IoRole::Probe
                           : v == g_.logits ? IoRole::Logits
                           : v == g_.act    ? IoRole::Act
                                            : IoRole::Next,
                           place);
            auto rows = g_.shape(v).rows;
            e.rows = rows == Rows::Tokens ? program::IoRows::Tokens
                     : rows == Rows::Seqs ? program::IoRows::Seqs
                                          : program::IoRows::Markers;
            e.value = v.id;
            e.width = width(v);
            if (probe) {
                auto& p = m.probes[k - m.graph_outputs()];
                e.after = std::uint32_t(p.after);
                if (p.layer) e.layer = std::uint32_t(*p.layer);
            }
            h.io.push_back(e);
        }
    }

    void map_regions() {
        auto& p = out_.program;
        auto& cap = out_.capacity;
        std::uint64_t at = 0;
        auto region = [&](Region r, std::uint64_t size, std::uint64_t& budget) {
            p.regions.push_back({r, program::Space::Ddr, at, size});
            const std::uint64_t from = at;
            at = align_up(at + size, t_.stripe());
            budget = at - from;
        };
        region(Region::Weights, weights_end_, cap.weights);
        region(Region::Caches, caches_end_, cap.caches);
        region(Region::State, state_end_, cap.state);
        region(Region::Io, share_ ? std::max(io_end_, share_->io_bytes) : io_end_, cap.io);
        p.arena_bytes =
            share_ ? std::max<std::uint64_t>(4 * out_.layout.len, share_->arena_bytes) : 4 * out_.layout.len;
        p.config_digest = t_.config_digest;
        p.regions.push_back({Region::Arena, program::Space::Sram, 0, p.arena_bytes});
        p.regions.push_back(
            {Region::Program, program::Space::Ddr, at + (share_ ? share_->program_offset : 0), 0});
        p.regions.back().size =
            program::card_bytes(p); // fixed-width fields: the size does not change the size
        cap.program = share_ ? share_->programs_bytes : p.regions.back().size;
        cap.ddr_bytes = t_.ddr_bytes;
        cap.channels = t_.channels;
        cap.channel_bytes = t_.channel_bytes;
        cap.weight_format = t_.weight_format;
        cap.positions = o_.max_positions;
        cap.seqs = store_sequences();
        if (refuse_over_capacity_ && !cap.fits()) throw Refusal(cap.refusal());
    }
};

} // namespace

std::optional<std::string> arena_refusal(const Graph& g, const graph::Bucket& b, std::uint64_t sram_bytes) {
    const std::uint64_t need = 4 * layout(g, b).len;
    if (need <= sram_bytes) return std::nullopt;
    return fmt::format(
        "the arena needs {} bytes and the card's SRAM holds {} bytes (`sram.bytes` = {}; raise "
        "it to at least {})",
        need, sram_bytes, sram_bytes, need);
}

Compiled lower(const Graph& g, const WeightSource& weights, const Target& target, const Options& options) {
    return Lowering(g, weights, target, options).run();
}

Capacity capacity(const Graph& g, const WeightSource& weights, const Target& target, Options options) {
    options.shapes_only = true;
    return Lowering(g, weights, target, options, false).run().capacity;
}

namespace {

/// The shares of a set of `buckets` lowered with `options`: sizes from a shapes-only lowering of each.
std::vector<SetShare> shares_of(const Graph& g, const WeightSource& weights, const Target& target,
                                Options options, std::span<const Bucket> buckets) {
    options.shapes_only = true;
    std::vector<std::uint64_t> programs;
    SetShare all;
    for (auto& b : buckets) {
        options.bucket = b;
        auto c = Lowering(g, weights, target, options, false).run();
        all.io_bytes = std::max(all.io_bytes, c.program.region(Region::Io)->size);
        all.arena_bytes = std::max(all.arena_bytes, c.program.arena_bytes);
        programs.push_back(c.program.region(Region::Program)->size);
    }
    std::vector<SetShare> shares;
    for (auto bytes : programs) {
        shares.push_back(all);
        shares.back().program_offset = all.programs_bytes;
        all.programs_bytes += align_up(bytes, line);
    }
    for (auto& sh : shares)
        sh.programs_bytes = all.programs_bytes;
    return shares;
}

void need_a_set(const Options& options, std::span<const Bucket> buckets) {
    if (buckets.empty()) throw Error("a bucket set needs at least one bucket");
    if (!options.slots)
        throw Error("a bucket set needs slots (lower::Options::slots): without them each bucket's stores are "
                    "laid out for its own sequences, and the buckets could not share them");
}

} // namespace

std::vector<Compiled> lower_set(const Graph& g, const WeightSource& weights, const Target& target,
                                const Options& options, std::span<const Bucket> buckets) {
    need_a_set(options, buckets);
    auto shares = shares_of(g, weights, target, options, buckets);
    std::vector<Compiled> set;
    for (std::size_t k = 0; k < buckets.size(); ++k) {
        Options o = options;
        o.bucket = buckets[k];
        if (k > 0) o.shapes_only = true; // the weights are the first bucket's, packed once
        set.push_back(Lowering(g, weights, target, o, true, &shares[k]).run());
        if (k > 0) {
            set[k].image = set[0].image;
            set[k].program.image_digest = set[0].program.image_digest;
            set[k].options.shapes_only = options.shapes_only;
        }
    }
    return set;
}

SlotCapacity slot_capacity(const Graph& g, const WeightSource& weights, const Target& target,
                           const Options& options, std::span<const Bucket> buckets) {
    Options o = options;
    o.slots = 1;
    auto shares = shares_of(g, weights, target, o, buckets);
    o.bucket = buckets.front();
    o.shapes_only = true;
    auto cap = Lowering(g, weights, target, o, false, &shares.front()).run().capacity;
    SlotCapacity sc;
    for (auto& s : g.states)
        sc.per_slot += align_up(state_bytes(s, o.max_positions, target.storage.cache_row_bytes,
                                            target.storage.state_element_bytes),
                                line);
    // Beside the weights, io and programs: the pad slot, and the stripe each of the two store
    // regions may round up to.
    const std::uint64_t fixed = cap.weights + cap.io + cap.program + sc.per_slot + 2 * target.stripe();
    sc.free = cap.ddr_bytes > fixed ? cap.ddr_bytes - fixed : 0;
    sc.slots = sc.per_slot ? sc.free / sc.per_slot : 0;
    return sc;
}

} // namespace cardsim::lower
