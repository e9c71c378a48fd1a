#pragma once
// The lowering pass behind lower.hpp, private to engine/lower/: one class whose members are
// defined by concern, so that a new op family adds a file rather than growing a shared one:
//   lowering.cpp        the pass: refusals, fusion groups to commands, probes and output copies
//   placement.cpp       the DDR regions: states, io, weights (packed by jobs), the host map
//   emit_common.cpp     ops every family uses: matvecs (merged too), norms, elementwise
//   emit_attention.cpp  rotary, self attention, cache append, attention over the cache
//   emit_mixer.cpp      the Gated-DeltaNet mixer: conv, L2 norm, gates, delta step, gated norm
//   emit_ffn.cpp        the feed-forward activations: SiLU·up, GELU, GeGLU
//   emit_head.cpp       embedding, arg-max and the encoder's heads
//   emit_experts.cpp    a mixture of experts: router, route, expert matvecs, shared expert, combine
//   lower.cpp           the public functions of lower.hpp

#include "engine/error.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/slots.hpp"
#include "engine/shim/fusion.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace cardsim::lower::detail {

/// Where a job writes its chunk's bytes: the chunk in host memory, or its place in the image file
/// being written (program::ImageFile::write), in pieces of the filler's choosing. Every byte of the
/// chunk is put once.
class Destination {
public:
    /// The chunk in memory.
    explicit Destination(std::span<std::byte> memory) : memory_(memory), size_(memory.size()) {}
    /// The chunk of `size` bytes at DDR address `address` of `file`.
    Destination(const program::ImageFile& file, std::uint64_t address, std::uint64_t size)
        : file_(&file), address_(address), size_(size) {}
    /// The chunk's bytes.
    std::uint64_t size() const { return size_; }
    /// The chunk in place, to pack into; empty when its bytes go to a file.
    std::span<std::byte> memory() const { return memory_; }
    /// Puts `bytes` at `offset` of the chunk (inside it).
    void put(std::uint64_t offset, std::span<const std::byte> bytes) const;

private:
    std::span<std::byte> memory_;
    const program::ImageFile* file_ = nullptr;
    std::uint64_t address_ = 0, size_ = 0;
};

/// How a job fills its chunk.
using Fill = std::function<void(const Destination&)>;

using namespace graph;
using program::Place;
using program::Region;
namespace slots = program::slots;

/// `v` rounded up to a multiple of `a` (0: `v`).
inline std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
    return a ? (v + a - 1) / a * a : v;
}

/// Which of `g`'s states a card keeps: those the ops of its part of a plan (`stage`) read or
/// write, or every state on one card.
std::vector<bool> states_kept(const Graph& g, const std::optional<Stage>& stage);

/// How a constant is stored: packed in the weight format, or as raw f32.
enum class Storing { Packed, PackedTransposed, RawF32 };

/// What the buckets of a set share (lower_set): the io region and the arena sized for the largest
/// bucket, and one program area holding every bucket's commands, this bucket's at `program_offset`.
struct SetShare {
    std::uint64_t io_bytes = 0, arena_bytes = 0, program_offset = 0, programs_bytes = 0;
};

/// One lowering of a graph for one bucket (lower.hpp's `lower` says what it does).
class Lowering {
public:
    Lowering(const Graph& g, const WeightSource& ws, const Target& t, const Options& o,
             bool refuse_over_capacity = true, const SetShare* share = nullptr)
        : g_(g), ws_(ws), t_(t), o_(o), refuse_over_capacity_(refuse_over_capacity), share_(share) {}

    /// Runs the pass once: the program, its image and what lowering knows besides.
    Compiled run();

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
    /// A weight chunk to fill: its index in the image, its reserved size, what it holds (the
    /// tensors, views and storing, a key naming its bytes for a given weight format), and how to
    /// write its bytes into the chunk.
    struct Job {
        std::size_t chunk;
        std::uint64_t bytes;
        std::string key;
        Fill fill;
    };
    std::vector<Job> jobs_;

    // ---- the pass (lowering.cpp) ----

    /// Throws cardsim::Error listing every refusal of the shim (or a malformed graph).
    void refuse_what_the_card_cannot_run();

    std::size_t rows(Val v) const { return o_.bucket.rows(g_.shape(v).rows); }
    std::size_t width(Val v) const { return g_.shape(v).width; }
    /// The arena bytes of `v`.
    Place arena(Val v) const {
        return Place{Region::Arena, 4 * out_.layout.offsets[v.id], 4 * rows(v) * width(v)};
    }

    /// The operand at place `p` (its access comes from the command's slot).
    static program::Operand on(const Place& p) {
        return {p.region, program::Access::Read, p.offset, p.bytes};
    }
    /// An absent optional operand.
    static program::Operand absent() { return {}; }

    /// Appends a command of opcode `S` for graph op `graph_op` (the graph's op count for copies
    /// that belong to no op), its slots filled by name; each present operand takes its slot's access.
    template <class S>
    void put(std::size_t graph_op, const typename S::template Each<program::Operand>& operands,
             const typename S::Dims& dims, const typename S::Params& params = {}, std::uint32_t flags = 0) {
        program::Command c;
        c.unit = program::spec(S::opcode).unit;
        c.flags = flags;
        program::fill<S>(c, operands, dims, params);
        out_.program.commands.push_back(std::move(c));
        out_.op_of.push_back(graph_op);
    }

    /// Refuses op `i` (which reads a cache or state) when the bucket's rows are not the same
    /// number of tokens of every sequence (without slots).
    void need_decode_rows(std::size_t i) const;
    /// The commands of one fusion group: one for a Native merged class, else one per op.
    void emit(const shim::Group& grp);
    /// The command of op `i` alone.
    void single(std::size_t i);
    /// Copies each probe that stands after op `op` to its io place, right after the command that ran
    /// it (with the ops `same_command`, which must not write the value again): the dependencies make
    /// the copy wait for that command and make later writers of those arena bytes wait for it.
    void copy_probes(std::size_t op, std::span<const std::size_t> same_command);
    /// Copies the graph's outputs to their io places.
    void copy_outputs();

    // ---- placement (placement.cpp) ----

    void place_states();
    /// The sequences every store is laid out for: the bucket's, or the slots and the pad slot.
    std::size_t store_sequences() const { return o_.slots ? *o_.slots + 1 : o_.bucket.seqs; }
    /// The `slots` operand of a stateful command: the io slots under slots, else absent.
    program::Operand slots_operand() const { return o_.slots ? on(out_.io.slots) : absent(); }
    /// The `positions` operand of a recurrent command (Conv, DeltaStep): the io positions under
    /// slots (a row at position 0 starts its slot's sequence from a zero store), else absent.
    program::Operand start_positions_operand() const { return o_.slots ? on(out_.io.positions) : absent(); }
    /// The next `bytes` of the io region.
    Place io(std::uint64_t bytes);
    void place_io();
    /// Reserves `bytes` in the weights region at the next stripe (matrices) or line (raw constants),
    /// to be filled by `fill` when the jobs run (after every command is emitted); `key` names
    /// what the bytes hold (Job::key).
    Place reserve(std::uint64_t bytes, bool stripe, std::string key, Fill fill);
    /// Fills every reserved chunk, one after another (streaming: one tensor is read at a time and
    /// its mapped pages released after), each spread over the host's threads by blocks of rows
    /// (`kernels::parallel_for`, which honours CARDSIM_HOST_THREADS). Deterministic: every row is
    /// packed alone; the first failure (in job order) is thrown. Sets the program's image digest.
    void run_jobs();
    /// Fills every job's chunk at `destination(job)` and sets the image digest: with two host
    /// threads or more, the digest follows the packing on a thread of its own, each chunk hashed
    /// once its job is done, so little of that pass is left when the last job ends.
    void fill_and_digest(const std::function<Destination(const Job&)>& destination);
    /// The values `view` reads of `tensor`, transposed when `transpose_copy`.
    std::vector<float> values_of(const Weight& w, bool transpose_copy) const;
    /// Puts in `out` the packed `rows` × `cols` matrix whose rows are those of `parts` in order (one
    /// part when `transpose`: its transpose). Row-separable packers read blocks of rows straight
    /// from the source on the host's threads and pack them in place, or (into a file) into a
    /// buffer of each thread's, written out every 256 KiB; the tensors are released after.
    void pack(const std::vector<Weight>& parts, bool transpose, std::size_t rows, std::size_t cols,
              const Destination& out) const;
    /// Records in the image's account where each of `views` lies in the stacked matrix `all`
    /// (their rows, or their transposes' when `transpose`, one after another).
    void record_stack(const std::vector<Weight>& views, bool transpose, const Place& all);
    /// The weights-region bytes of `w` stored as `how`, placing them the first time.
    Place weight(const Weight& w, Storing how, std::size_t want_rows, std::size_t want_cols);
    /// `w` as `n` raw f32 values.
    Place raw_weight(const Weight& w, std::size_t n) { return weight(w, Storing::RawF32, n, 1); }
    /// `w` as a packed `n` × `k` matrix.
    Place matrix(const Weight& w, std::size_t n, std::size_t k) {
        return weight(w, transposed(w.view) ? Storing::Packed : Storing::PackedTransposed, n, k);
    }
    /// The host map: the bucket, the ids the embedding takes, every io place with its role.
    void describe_host();
    /// The program's regions and what it takes of the card's DDR (refused when over it).
    void map_regions();

    // ---- ops every family uses (emit_common.cpp) ----

    /// A Gemm: its matvec, or a partial Gemm's exact parts (emit_collectives.cpp).
    void emit_op(std::size_t i, const Gemm& o);
    /// A whole (not partial) Gemm's matvec.
    void gemm(std::size_t i, const Gemm& o);
    /// One matvec over the merged matrix of a MergedQkv group, writing up to three values.
    void merged_matvec(const shim::Group& grp);
    void emit_op(std::size_t i, const LayerNorm& o);
    void emit_op(std::size_t i, const RmsNorm& o);
    void emit_op(std::size_t i, const Add& o);
    void emit_op(std::size_t i, const Silu& o);
    void emit_op(std::size_t i, const SigmoidGate& o);
    /// A one-input elementwise command (`x`, `out`; `rows`, `width`).
    template <class S>
    void unary(std::size_t i, Val x, Val out, std::size_t w) {
        put<S>(i, {.x = on(arena(x)), .out = on(arena(out))}, {.rows = rows(x), .width = w});
    }

    // ---- attention (emit_attention.cpp) ----

    void emit_op(std::size_t i, const Rope& o);
    void emit_op(std::size_t i, const Attention& o);
    void emit_op(std::size_t i, const Rotate& o);
    void emit_op(std::size_t i, const CacheAppend& o);
    void emit_op(std::size_t i, const AttendCache& o);
    /// The kv heads and head size of cache state `s`.
    std::pair<std::size_t, std::size_t> cache_shape(StateId s) const;

    // ---- the Gated-DeltaNet mixer (emit_mixer.cpp) ----

    /// The conv command of op `i`, its SiLU fused when `silu` (the ConvBiasSilu class).
    void conv(std::size_t i, const Silu* silu);
    void emit_op(std::size_t i, const Conv& o);
    void emit_op(std::size_t i, const L2Norm& o);
    void emit_op(std::size_t i, const GdnGates& o);
    void emit_op(std::size_t i, const DeltaStep& o);
    void emit_op(std::size_t i, const GatedRmsNorm& o);

    // ---- feed-forward (emit_ffn.cpp) ----

    void emit_op(std::size_t i, const SiluMul& o);
    void emit_op(std::size_t i, const Gelu& o);
    void emit_op(std::size_t i, const GeGlu& o);

    // ---- a mixture of experts (emit_experts.cpp) ----

    /// A per-layer expert table and the matrices it points into.
    struct ExpertTable {
        Place table;              ///< one u64 byte offset per expert into `matrices`
        Place matrices;           ///< every expert's packed matrix, one after another
        std::uint64_t stride = 0; ///< bytes from one expert's matrix to the next
    };
    std::map<std::string, Place> yarn_tables_; ///< YaRN frequency tables placed, by their parameters
    /// Reserves the packed matrix of `views` stacked (their rows one after another), `k` wide.
    Place stacked_matrix(const std::vector<Weight>& views, std::size_t k);
    /// Reserves each expert's biases (`per_expert[e]`'s views, `n` values in all, one expert after
    /// another) as raw f32.
    Place bias_table(const std::vector<std::vector<Weight>>& per_expert, std::size_t n);
    /// Reserves each expert's stacked matrix (`per_expert[e]`'s views, `n` × `k` in all) and the
    /// table of their offsets.
    ExpertTable expert_table(const std::vector<std::vector<Weight>>& per_expert, std::size_t n,
                             std::size_t k);
    void emit_op(std::size_t i, const Moe& o);
    std::uint64_t routers_ = 0; ///< Moe ops lowered so far: the next one's router number

    // ---- embedding and heads (emit_head.cpp) ----

    void emit_op(std::size_t i, const Embed& o);
    void emit_op(std::size_t i, const ArgMax& o);
    void emit_op(std::size_t i, const AddType& o);
    void emit_op(std::size_t i, const GatherMarkers& o);
    void emit_op(std::size_t i, const ActFeatures& o);

    // ---- a tensor-parallel card's collectives (emit_collectives.cpp) ----

    /// A card's place in its tensor-parallel group's ring: its rank of `n`, and the cards it sends
    /// to (`next`, rank + 1) and receives from (`prev`, rank − 1), mod n.
    struct Ring {
        std::size_t rank = 0, n = 1;
        std::uint32_t next = 0, prev = 0;
    };
    /// This card's ring, for op `i` (an Error without a plan, or when the op's card count is not
    /// its group's).
    Ring ring(std::size_t i, std::size_t cards) const;
    void emit_op(std::size_t i, const AllReduce& o);
    void emit_op(std::size_t i, const AllGather& o);

    /// Any other op: no command on this card.
    template <class T>
    void emit_op(std::size_t i, const T&) {
        throw Error(fmt::format("op {} ({}) has no command on this card", i, kind(g_.ops[i])));
    }
};

} // namespace cardsim::lower::detail
