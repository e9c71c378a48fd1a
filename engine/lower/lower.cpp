#include "engine/lower/lower.hpp"

#include "engine/error.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/lower/dependencies.hpp"
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
using program::Opcode;
using program::Place;
using program::Region;

constexpr std::uint64_t line = 64; ///< every placement starts on a 64-byte line

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
    return a ? (v + a - 1) / a * a : v;
}

/// How a constant is stored: packed in the weight format, or as raw f32.
enum class Storing { Packed, PackedTransposed, RawF32 };

/// A view without its transpose flag: which stored rows a constant reads.
std::string rows_key(const View& v) {
    if (auto* r = std::get_if<RowRange>(&v)) return fmt::format("r{}+{}", r->first, r->count);
    if (auto* h = std::get_if<HeadPart>(&v)) return fmt::format("h{}/{}+{}", h->stride, h->offset, h->width);
    return "w";
}

/// Whether the op multiplies by the transpose of the stored matrix.
bool transposed(const View& v) {
    return std::visit([](const auto& x) { return x.transpose; }, v);
}

/// The host map entry of an io place.
program::IoEntry entry(program::IoRole role, const Place& p) {
    program::IoEntry e;
    e.role = role;
    e.offset = p.offset;
    e.bytes = p.bytes;
    return e;
}

class Lowering {
public:
    Lowering(const Graph& g, const WeightSource& ws, const Target& t, const Options& o)
        : g_(g), ws_(ws), t_(t), o_(o) {}

    Compiled run() {
        refuse_what_the_card_cannot_run();
        out_.options = o_;
        out_.layout = layout(g_, o_.bucket);
        if (4 * out_.layout.len > t_.sram_bytes)
            throw Error(fmt::format("the arena needs {} bytes and the card's SRAM holds {} bytes",
                                    4 * out_.layout.len, t_.sram_bytes));
        for (auto& p : o_.probes)
            if (auto problem = check(g_, p)) throw Error("cannot observe a value: " + *problem);
        place_states();
        place_io();
        auto fusion = shim::fuse(g_, t_.caps);
        for (auto& grp : fusion.groups)
            emit(grp);
        copy_outputs();
        run_jobs();
        add_dependencies(out_.program);
        map_regions();
        describe_host();
        return std::move(out_);
    }

private:
    const Graph& g_;
    const WeightSource& ws_;
    const Target& t_;
    Options o_;
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

    static program::Operand operand(const Place& p, Access a) { return {p.region, a, p.offset, p.bytes}; }
    static program::Operand absent() { return {}; }

    // ---- placement ----

    void place_states() {
        const std::size_t seqs = o_.bucket.seqs;
        for (auto& s : g_.states) {
            auto [region, per_seq] = std::visit(
                [&](const auto& st) -> std::pair<Region, std::uint64_t> {
                    using T = std::decay_t<decltype(st)>;
                    if constexpr (std::is_same_v<T, KeyCache> || std::is_same_v<T, ValueCache>)
                        return {Region::Caches, std::uint64_t(o_.max_positions) * st.kv_heads *
                                                    t_.storage.cache_row_bytes(st.head_dim)};
                    else if constexpr (std::is_same_v<T, ConvWindow>)
                        return {Region::State, std::uint64_t(st.kernel - 1) * st.channels * 4};
                    else
                        return {Region::State,
                                std::uint64_t(st.heads) * st.dk * st.dv * t_.storage.state_element_bytes};
                },
                s);
            auto& end = region == Region::Caches ? caches_end_ : state_end_;
            Place p{region, end, align_up(per_seq, line) * seqs};
            end = align_up(end + p.bytes, line);
            out_.states.push_back(p);
        }
    }

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
        std::size_t r = shape.rows, c = shape.row_len;
        std::vector<float> t(values.size());
        for (std::size_t i = 0; i < r; ++i)
            for (std::size_t j = 0; j < c; ++j)
                t[j * r + i] = values[i * c + j];
        return t;
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

    Command& command(Opcode op, std::size_t graph_op) {
        Command c;
        c.opcode = op;
        c.unit = program::spec(op).unit;
        out_.program.commands.push_back(std::move(c));
        out_.op_of.push_back(graph_op);
        return out_.program.commands.back();
    }

    static std::uint64_t bits(double v) { return program::f64_bits(v); }

    void need_decode_rows(std::size_t i) const {
        if (o_.bucket.tokens != o_.bucket.seqs)
            throw Error(
                fmt::format("op {} ({}) reads a cache or state: a decode step needs as many tokens as "
                            "sequences, the bucket has {} tokens and {} sequences",
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
        auto& c = command(Opcode::Matvec, grp.ops.front());
        c.operands = {operand(arena(first.a), Access::Read), operand(w, Access::Read), absent()};
        for (std::size_t p = 0; p < 3; ++p) {
            if (p < grp.ops.size())
                c.operands.push_back(operand(arena(std::get<Gemm>(g_.ops[grp.ops[p]]).out),
                                             p ? Access::Write : Access::ReadWrite));
            else
                c.operands.push_back(absent());
        }
        c.dims = {rows(first.a), n, k, parts[0], parts.size() > 1 ? parts[1] : 0};
    }

    void conv(std::size_t i, const Silu* silu) {
        auto& o = std::get<Conv>(g_.ops[i]);
        need_decode_rows(i);
        auto& window = std::get<ConvWindow>(g_.states[o.window.id]);
        auto& c = command(Opcode::Conv, i);
        c.flags = silu ? program::flag::FusedSilu : 0;
        c.operands = {operand(arena(o.x), Access::Read),
                      operand(raw_weight(o.w, window.channels * window.kernel), Access::Read),
                      operand(out_.states[o.window.id], Access::ReadWrite),
                      operand(arena(silu ? silu->out : o.out), Access::Write)};
        c.dims = {rows(o.x), window.channels, window.kernel};
    }

    void single(std::size_t i) {
        std::visit([&](const auto& o) { emit_op(i, o); }, g_.ops[i]);
    }

    void emit_op(std::size_t i, const Embed& o) {
        auto& c = command(Opcode::Embed, i);
        auto shape = ws_.view_of(o.table.tensor, o.table.view);
        c.operands = {
            operand(matrix(Weight{o.table.tensor, Whole{true}}, shape.rows, width(o.out)), Access::Read),
            operand(out_.io.ids, Access::Read), operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.out), width(o.out)};
    }
    void emit_op(std::size_t i, const LayerNorm& o) {
        auto& c = command(Opcode::LayerNorm, i);
        c.operands = {operand(arena(o.x), Access::Read), operand(raw_weight(o.w, width(o.x)), Access::Read),
                      o.b ? operand(raw_weight(*o.b, width(o.x)), Access::Read) : absent(),
                      operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.x), width(o.x)};
        c.params = {bits(o.eps)};
    }
    void emit_op(std::size_t i, const Gemm& o) {
        auto& c = command(Opcode::Matvec, i);
        std::size_t n = width(o.out), k = width(o.a);
        c.flags = o.epilogue == Epilogue::Accumulate ? program::flag::Accumulate
                  : o.epilogue == Epilogue::Gelu     ? program::flag::EpilogueGelu
                  : o.epilogue == Epilogue::Relu     ? program::flag::EpilogueRelu
                                                     : 0;
        c.operands = {operand(arena(o.a), Access::Read),
                      operand(matrix(o.w, n, k), Access::Read),
                      o.b ? operand(raw_weight(*o.b, n), Access::Read) : absent(),
                      operand(arena(o.out), Access::ReadWrite),
                      absent(),
                      absent()};
        c.dims = {rows(o.a), n, k, n, 0};
    }
    void emit_op(std::size_t i, const Rope& o) {
        auto& c = command(Opcode::Rope, i);
        c.operands = {operand(arena(o.qkv), Access::ReadWrite), operand(out_.io.positions, Access::Read)};
        c.dims = {rows(o.qkv), o.heads, o.head_dim};
        c.params = {bits(o.theta)};
    }
    void emit_op(std::size_t i, const Attention& o) {
        auto& c = command(Opcode::SelfAttention, i);
        c.operands = {operand(arena(o.qkv), Access::Read), operand(out_.io.seq_starts, Access::Read),
                      operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.qkv), o_.bucket.seqs, o.heads, o.head_dim, o.window.value_or(0)};
    }
    void emit_op(std::size_t i, const GeGlu& o) { unary(i, Opcode::GeGlu, o.x, o.out, width(o.out)); }
    void emit_op(std::size_t i, const AddType& o) {
        auto& c = command(Opcode::AddType, i);
        auto shape = ws_.view_of(o.table.tensor, o.table.view);
        c.operands = {operand(arena(o.h), Access::ReadWrite),
                      operand(raw_weight(o.table, shape.numel()), Access::Read),
                      operand(out_.io.qtype, Access::Read), operand(out_.io.seq_starts, Access::Read)};
        c.dims = {rows(o.h), o_.bucket.seqs, width(o.h)};
    }
    void emit_op(std::size_t i, const GatherMarkers& o) {
        auto& c = command(Opcode::GatherMarkers, i);
        c.operands = {operand(arena(o.h), Access::Read), operand(out_.io.marker_rows, Access::Read),
                      operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.out), width(o.out)};
    }
    void emit_op(std::size_t i, const ActFeatures& o) {
        auto& c = command(Opcode::ActFeatures, i);
        c.operands = {operand(arena(o.h), Access::Read), operand(arena(o.logits), Access::Read),
                      operand(out_.io.seq_starts, Access::Read), operand(out_.io.marker_starts, Access::Read),
                      operand(arena(o.out), Access::Write)};
        c.dims = {o_.bucket.seqs, o_.bucket.markers, width(o.h)};
    }
    void emit_op(std::size_t i, const RmsNorm& o) {
        auto& c = command(Opcode::RmsNorm, i);
        c.flags = o.zero_centred ? program::flag::ZeroCentred : 0;
        c.operands = {operand(arena(o.x), Access::Read),
                      o.w ? operand(raw_weight(*o.w, o.group), Access::Read) : absent(),
                      operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.x), width(o.x), o.group};
        c.params = {bits(o.eps)};
    }
    void emit_op(std::size_t i, const Rotate& o) {
        if (o.interleaved)
            throw Error(
                fmt::format("op {} (Rotate): interleaved rotary pairs have no command on this card", i));
        auto& c = command(Opcode::Rotate, i);
        c.operands = {operand(arena(o.x), Access::ReadWrite), operand(out_.io.positions, Access::Read)};
        c.dims = {rows(o.x), width(o.x) / o.head_dim, o.head_dim, o.rotary_dim};
        c.params = {bits(o.theta)};
    }
    void emit_op(std::size_t i, const CacheAppend& o) {
        need_decode_rows(i);
        auto& c = command(Opcode::CacheAppend, i);
        auto [heads, dim] = cache_shape(o.cache);
        c.operands = {operand(arena(o.x), Access::Read), operand(out_.io.positions, Access::Read),
                      operand(out_.states[o.cache.id], Access::ReadWrite)};
        c.dims = {rows(o.x), heads, dim, o_.max_positions};
    }
    void emit_op(std::size_t i, const AttendCache& o) {
        need_decode_rows(i);
        auto& c = command(Opcode::Attend, i);
        c.operands = {operand(arena(o.q), Access::Read),
                      operand(out_.io.positions, Access::Read),
                      operand(out_.states[o.keys.id], Access::Read),
                      operand(out_.states[o.values.id], Access::Read),
                      o.sinks ? operand(raw_weight(*o.sinks, o.heads), Access::Read) : absent(),
                      operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.q), o.heads, o.kv_heads, o.head_dim, o_.max_positions, o.window.value_or(0)};
        c.params = {bits(o.scale), bits(o.softcap.value_or(0.0))};
    }
    void emit_op(std::size_t i, const Conv&) { conv(i, nullptr); }
    void emit_op(std::size_t i, const Silu& o) { unary(i, Opcode::Silu, o.x, o.out, width(o.x)); }
    void emit_op(std::size_t i, const L2Norm& o) {
        auto& c = command(Opcode::L2Norm, i);
        c.operands = {operand(arena(o.x), Access::Read), operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.x), width(o.x), o.group};
        c.params = {bits(o.eps), bits(o.scale)};
    }
    void emit_op(std::size_t i, const GdnGates& o) {
        auto& c = command(Opcode::Gates, i);
        std::size_t h = width(o.b);
        c.operands = {operand(arena(o.b), Access::Read),
                      operand(arena(o.a), Access::Read),
                      operand(raw_weight(o.a_log, h), Access::Read),
                      operand(raw_weight(o.dt_bias, h), Access::Read),
                      operand(arena(o.beta), Access::Write),
                      operand(arena(o.g), Access::Write)};
        c.dims = {rows(o.b), h};
    }
    void emit_op(std::size_t i, const DeltaStep& o) {
        need_decode_rows(i);
        auto& c = command(Opcode::DeltaStep, i);
        c.operands = {
            operand(arena(o.q), Access::Read),   operand(arena(o.k), Access::Read),
            operand(arena(o.v), Access::Read),   operand(arena(o.beta), Access::Read),
            operand(arena(o.g), Access::Read),   operand(out_.states[o.state.id], Access::ReadWrite),
            operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.q), o.key_heads, o.value_heads, o.dk, o.dv};
    }
    void emit_op(std::size_t i, const GatedRmsNorm& o) {
        auto& c = command(Opcode::GatedNorm, i);
        c.operands = {operand(arena(o.x), Access::Read), operand(arena(o.z), Access::Read),
                      operand(raw_weight(o.w, o.group), Access::Read), operand(arena(o.out), Access::Write)};
        c.dims = {rows(o.x), width(o.x), o.group};
        c.params = {bits(o.eps)};
    }
    void emit_op(std::size_t i, const SigmoidGate& o) { binary(i, Opcode::SigmoidGate, o.x, o.gate, o.out); }
    void emit_op(std::size_t i, const SiluMul& o) { binary(i, Opcode::SiluMul, o.gate, o.up, o.out); }
    void emit_op(std::size_t i, const Add& o) { binary(i, Opcode::Add, o.a, o.b, o.out); }
    void emit_op(std::size_t i, const ArgMax& o) { unary(i, Opcode::ArgMax, o.x, o.out, width(o.x)); }
    void emit_op(std::size_t i, const Gelu& o) { unary(i, Opcode::Gelu, o.x, o.out, width(o.x)); }
    template <class T>
    void emit_op(std::size_t i, const T&) {
        throw Error(fmt::format("op {} ({}) has no command on this card", i, kind(g_.ops[i])));
    }

    void unary(std::size_t i, Opcode op, Val x, Val out, std::size_t w) {
        auto& c = command(op, i);
        c.operands = {operand(arena(x), Access::Read), operand(arena(out), Access::Write)};
        c.dims = {rows(x), w};
    }
    void binary(std::size_t i, Opcode op, Val a, Val b, Val out) {
        auto& c = command(op, i);
        c.operands = {operand(arena(a), Access::Read), operand(arena(b), Access::Read),
                      operand(arena(out), Access::Write)};
        c.dims = {rows(a), width(a)};
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
            auto& c = command(Opcode::Copy, g_.ops.size());
            c.operands = {operand(arena(p.value), Access::Read),
                          operand(m.outputs[m.graph_outputs() + k].second, Access::Write)};
        }
    }

    void copy_outputs() {
        auto& m = out_.io;
        for (std::size_t k = 0; k < m.graph_outputs(); ++k) {
            auto& [v, place] = m.outputs[k];
            auto& c = command(Opcode::Copy, g_.ops.size());
            c.operands = {operand(arena(v), Access::Read), operand(place, Access::Write)};
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
        std::uint64_t at = 0;
        auto region = [&](Region r, std::uint64_t size) {
            p.regions.push_back({r, program::Space::Ddr, at, size});
            at = align_up(at + size, t_.stripe());
        };
        region(Region::Weights, weights_end_);
        region(Region::Caches, caches_end_);
        region(Region::State, state_end_);
        region(Region::Io, io_end_);
        p.arena_bytes = 4 * out_.layout.len;
        p.config_digest = t_.config_digest;
        p.image_digest = digest(out_.image);
        p.regions.push_back({Region::Arena, program::Space::Sram, 0, p.arena_bytes});
        p.regions.push_back({Region::Program, program::Space::Ddr, at, 0});
        p.regions.back().size =
            program::card_bytes(p); // fixed-width fields: the size does not change the size
        if (at + p.regions.back().size > t_.ddr_bytes)
            throw Error(fmt::format("the program needs {} bytes of DDR and the card has {}",
                                    at + p.regions.back().size, t_.ddr_bytes));
    }
};

} // namespace

Compiled lower(const Graph& g, const WeightSource& weights, const Target& target, const Options& options) {
    return Lowering(g, weights, target, options).run();
}

} // namespace cardsim::lower
