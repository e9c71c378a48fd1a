#pragma once
// The golden executor: evaluates a graph (values, not addresses) with the units' kernels, for one
// bucket and knob point. It shares nothing with lowering or the simulator beyond the graph IR,
// the numerics library and the kernels, so the simulator's outputs, read back from modelled DDR,
// must equal its outputs bit for bit: any difference is in lowering, layout, addressing or data
// movement.

#include "engine/card/card_config.hpp"
#include "engine/graph/batch.hpp"
#include "engine/graph/graph.hpp"
#include "engine/graph/weight_source.hpp"
#include "engine/program/image.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace cardsim::golden {

/// A graph ready to run step after step, keeping its per-sequence states (caches in the knob
/// point's keep format, convolution windows, delta states) between steps.
class Golden {
public:
    /// Quantises `g`'s weights from `weights` as the card config's format says, and zeroes the
    /// states for `bucket` sequences and `max_positions` cached positions. With `slots` (as
    /// lower::Options::slots) the states hold `slots + 1` sequences (the last the pad slot) and
    /// each step's rows name theirs in `BatchInputs::slots`.
    ///
    /// With `image` (the lowered image the card ran, which must outlive the executor), a matrix the
    /// image's account says it holds is packed block by block and compared with the image's bytes;
    /// when they are the same the executor reads those bytes rather than keep a copy of its own
    /// (the weights are then held once in a run). Any difference, or a matrix the image does not
    /// hold, and the executor keeps its own packing: its results never depend on lowering's.
    Golden(const graph::Graph& g, const graph::WeightSource& weights, const card::CardConfig& config,
           const graph::Bucket& bucket, std::size_t max_positions,
           std::optional<std::size_t> slots = std::nullopt, const program::Image* image = nullptr);

    /// Packs ahead every matrix the dense ops read (embeddings and matvecs; experts stay packed as
    /// they are chosen), as the first step would: another thread may do it while the card runs.
    void prepare();

    /// Makes the following steps run bucket `b`. With slots the stores hold slots, not a bucket's
    /// sequences, so a session over a set of buckets may change it every step; without slots the
    /// stores are the bucket's, and another bucket is refused (cardsim::Error).
    void use(const graph::Bucket& b);

    /// Runs one step; returns every value of the graph after it (indexed like `Graph::vals`, f32
    /// rows; values no op writes are empty). `after`, when set, is called after each op with its
    /// index, while `value` still holds what that op left (to observe a value written in place).
    const std::vector<std::vector<float>>& step(const graph::BatchInputs& in,
                                                const std::function<void(std::size_t op)>& after = {});

    /// The value `v` after the last step.
    const std::vector<float>& value(graph::Val v) const { return values_.at(v.id); }

    /// How many matrices it read from the image (checked equal to its own packing) and how many
    /// it packed for itself, so far.
    struct Matrices {
        std::size_t from_image = 0, own = 0;
    };
    Matrices matrices() const { return matrices_; }

    /// The last step's routing: per Moe op in graph order, each row's chosen experts (rows × top_k).
    const std::vector<std::vector<std::uint32_t>>& routing() const { return routing_; }

private:
    /// A packed matrix: its own bytes, or the image's that were checked equal to them.
    struct Packed {
        std::vector<std::byte> own;
        std::span<const std::byte> bytes;
        std::size_t rows = 0, cols = 0;
    };
    const Packed& packed(const graph::Weight& w, std::size_t rows, std::size_t cols);
    const std::vector<float>& raw(const graph::Weight& w);
    void run(std::size_t i, const graph::BatchInputs& in);
    /// A Moe op over `rows` rows, as the card runs it (lower/emit_experts.cpp): the router matvec,
    /// the route, the chosen experts' gate and up matvecs, SiLU·up, the down matvecs, the shared
    /// expert and its gate, the combine. Appends its routing to `routing_`.
    void moe(const graph::Moe& o, std::size_t rows);

    const graph::Graph& g_;
    const graph::WeightSource& weights_;
    card::CardConfig config_;
    graph::Bucket bucket_;
    std::size_t max_positions_;
    std::optional<std::size_t> slots_;
    std::vector<std::vector<float>> values_;
    std::vector<std::vector<std::byte>> states_;
    std::map<std::pair<graph::W, std::string>, Packed> packed_;
    /// The image's matrices by the same key as `packed_`, when an image was given.
    std::map<std::pair<graph::W, std::string>, std::span<const std::byte>> in_image_;
    std::map<std::pair<graph::W, std::string>, std::vector<float>> raw_;
    std::vector<std::vector<std::uint32_t>> routing_;
    Matrices matrices_;
};

} // namespace cardsim::golden
