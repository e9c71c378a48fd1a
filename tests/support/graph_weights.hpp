#pragma once
// Weights for a graph with no checkpoint behind it: each tensor shaped as the graph's ops need it,
// with deterministic values.

#include "engine/error.hpp"
#include "engine/graph/graph.hpp"
#include "engine/graph/weight_source.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <string>
#include <vector>

namespace cardsim::test {

using namespace cardsim::graph;

/// Tensors whose shapes are what the graph's ops need of them, with deterministic values.
class GraphWeights final : public WeightSource {
public:
    explicit GraphWeights(const Graph& g) {
        for (std::size_t i = 0; i < g.ops.size(); ++i) {
            std::visit(
                [&](const auto& o) {
                    using T = std::decay_t<decltype(o)>;
                    if constexpr (std::is_same_v<T, Gemm>)
                        once(o.w.tensor, {g.shape(o.out).width, g.shape(o.a).width});
                    else if constexpr (std::is_same_v<T, Embed>)
                        once(o.table.tensor, {1000, g.shape(o.out).width});
                    else if constexpr (std::is_same_v<T, RmsNorm>) {
                        if (o.w) once(o.w->tensor, {o.group});
                    } else if constexpr (std::is_same_v<T, LayerNorm>)
                        once(o.w.tensor, {g.shape(o.x).width});
                    else if constexpr (std::is_same_v<T, AddType>)
                        once(o.table.tensor, {4, g.shape(o.h).width});
                },
                g.ops[i]);
        }
    }
    /// Gives tensor `w` the shape `shape` (replacing what the graph's ops implied).
    void set(W w, std::vector<std::size_t> shape) {
        if (w >= shapes_.size()) shapes_.resize(w + 1), names_.resize(w + 1);
        shapes_[w] = std::move(shape);
        names_[w] = fmt::format("t{}", w);
    }
    /// Gives tensor `w` the shape `shape` unless an earlier op gave it one.
    void once(W w, std::vector<std::size_t> shape) {
        if (w >= shapes_.size() || shapes_[w].empty()) set(w, std::move(shape));
    }
    std::size_t tensor_count() const override { return shapes_.size(); }
    const std::string& name(W w) const override { return names_.at(w); }
    std::span<const std::size_t> shape(W w) const override { return shapes_.at(w); }
    void read_f32(W w, const View& view, std::span<float> out) const override {
        auto s = view_of(w, view);
        if (out.size() != s.numel())
            throw Error(fmt::format("t{}: {} values asked of {}", w, out.size(), s.numel()));
        fill(w, 0, out);
    }
    /// Rows alone, as a checkpoint reads them: the packer calls this from several threads, one
    /// chunk of rows each, so it must not read the whole tensor per chunk (nor use Catch's macros).
    void read_rows_f32(W w, const View& view, std::size_t first, std::size_t count,
                       std::span<float> out) const override {
        auto s = view_of(w, view);
        if (first > s.rows || count > s.rows - first || out.size() != count * s.row_len)
            throw Error(fmt::format("t{}: rows {} .. {} of {}", w, first, first + count, s.rows));
        fill(w, first * s.row_len, out);
    }
    void read_f64(W w, const View& view, std::span<double> out) const override {
        std::vector<float> f(out.size());
        read_f32(w, view, f);
        for (std::size_t i = 0; i < f.size(); ++i)
            out[i] = f[i];
    }

private:
    /// The values at view positions `from` .. `from + out.size()` of tensor `w`.
    static void fill(W w, std::size_t from, std::span<float> out) {
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = float(((from + i) * 7 + w * 13) % 17) / 16.0f - 0.5f;
    }
    std::vector<std::vector<std::size_t>> shapes_;
    std::vector<std::string> names_;
};

} // namespace cardsim::test
