#pragma once
// How a graph's constants are read: the interface the engine's lowering (and the f64 graph
// evaluator) reads checkpoint tensors through, and what a view of a tensor is as numbers.

#include "engine/graph/graph.hpp"
#include "models/dtype.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace cardsim::models {

/// The matrix a view reads: `rows` rows of `row_len` elements, as stored (row-major). A tensor's
/// rows are its leading dimension; each row is the product of the other dimensions (a 1-D tensor
/// of `n` is `n` rows of one element, a scalar one row of one).
struct ViewShape {
    std::size_t rows = 0;
    std::size_t row_len = 0;
    std::size_t numel() const { return rows * row_len; }
    friend bool operator==(const ViewShape&, const ViewShape&) = default;
};

/// The shape `view` reads of a tensor shaped `shape`, or a sentence saying why the view does not
/// fit it (a row range past its rows, a head part wider than its stride or a stride that does not
/// divide its rows).
std::variant<ViewShape, std::string> view_shape(std::span<const std::size_t> shape, const graph::View& view);

/// The view written for a person: `whole`, `rows 0..512`, `heads of 512: rows 256..512 of each`,
/// with `ᵀ` when the op multiplies by the transpose.
std::string describe(const graph::View& view);

/// Where weights come from: tensors by index (graph::W), their names and shapes, and their values
/// through a view. Implemented by `Checkpoint`; the engine will read a checkpoint through the same
/// calls.
class WeightSource {
public:
    virtual ~WeightSource() = default;
    /// How many tensors there are; indices run 0 .. tensor_count() − 1.
    virtual std::size_t tensor_count() const = 0;
    /// The checkpoint name of tensor `w`.
    virtual const std::string& name(graph::W w) const = 0;
    /// The stored shape of tensor `w`.
    virtual std::span<const std::size_t> shape(graph::W w) const = 0;
    /// The stored element type of tensor `w`.
    virtual Dtype dtype(graph::W w) const = 0;
    /// Writes the elements `view` reads of tensor `w` into `out` (`view_shape(...).numel()` of them,
    /// rows in view order, each row as stored), converted exactly to f32 where the dtype allows
    /// (F64 and wide integers round to nearest). Throws cardsim::Error naming the tensor when the view
    /// does not fit it or `out` has the wrong size.
    virtual void read_f32(graph::W w, const graph::View& view, std::span<float> out) const = 0;
    /// As `read_f32`, in double (exact for every dtype but 64-bit integers beyond 2^53).
    virtual void read_f64(graph::W w, const graph::View& view, std::span<double> out) const = 0;

    /// The shape `view` reads of tensor `w`; throws cardsim::Error naming the tensor if it does not fit.
    ViewShape view_of(graph::W w, const graph::View& view) const;
    /// The elements `view` reads of tensor `w`, in double (see `read_f64`).
    std::vector<double> values(graph::W w, const graph::View& view) const;
};

} // namespace cardsim::models
