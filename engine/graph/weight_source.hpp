#pragma once
// Where a graph's constants come from: the interface the engine's lowering reads checkpoint
// tensors through (a checkpoint of `models/` implements it), and what a view of a tensor is as a
// matrix.

#include "engine/graph/graph.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace cardsim::graph {

/// The matrix a view reads: `rows` rows of `row_len` elements, row-major. A tensor's rows are the
/// product of all its dimensions but the last and each row its last dimension (a 1-D tensor of `n`
/// is `n` rows of one element; a fused expert tensor [E, 2I, H] is E · 2I rows of H, expert e's
/// rows e · 2I .. (e + 1) · 2I).
struct ViewShape {
    std::size_t rows = 0;
    std::size_t row_len = 0;
    std::size_t numel() const { return rows * row_len; }
    friend bool operator==(const ViewShape&, const ViewShape&) = default;
};

/// The shape `view` reads of a tensor shaped `shape`, or a sentence saying why it does not fit (a
/// row range past the rows, a head part wider than its stride, a stride that does not divide the rows).
std::variant<ViewShape, std::string> view_shape(std::span<const std::size_t> shape, const View& view);

/// Whether an op reading `view` multiplies by the transpose of the stored matrix.
bool transposed(const View& view);

/// Which stored rows `view` reads, as a key (`w` for the whole tensor, `r<first>+<count>`,
/// `h<stride>/<offset>+<width>`): two views with the same key read the same bytes, whatever their
/// transpose flags.
std::string rows_key(const View& view);

/// The `cols × rows` transpose of the row-major `rows × cols` matrix `values`.
std::vector<float> transpose(std::span<const float> values, std::size_t rows, std::size_t cols);

/// The bytes one sequence's state `s` takes: a cache holds `max_positions` rows per kv head of
/// `cache_row_bytes(head_dim)` bytes each; a convolution window `kernel − 1` f32 inputs per channel;
/// a Gated-DeltaNet state `heads · dk · dv` elements of `state_element_bytes`.
std::uint64_t state_bytes(const State& s, std::uint64_t max_positions,
                          const std::function<std::size_t(std::size_t head_dim)>& cache_row_bytes,
                          std::size_t state_element_bytes);

/// Tensors by index (`W`), with names, shapes and values through a view.
class WeightSource {
public:
    virtual ~WeightSource() = default;
    /// How many tensors there are; indices run 0 .. tensor_count() − 1.
    virtual std::size_t tensor_count() const = 0;
    /// The checkpoint name of tensor `w`.
    virtual const std::string& name(W w) const = 0;
    /// The stored shape of tensor `w`.
    virtual std::span<const std::size_t> shape(W w) const = 0;
    /// Writes the elements `view` reads of tensor `w` into `out` (`numel()` of its view shape),
    /// rows in view order, converted to f32 (exactly where the dtype allows). Throws cardsim::Error
    /// naming the tensor when the view does not fit or `out` has the wrong size.
    virtual void read_f32(W w, const View& view, std::span<float> out) const = 0;
    /// As `read_f32`, in double.
    virtual void read_f64(W w, const View& view, std::span<double> out) const = 0;
    /// Writes rows [first, first + count) of what `view` reads of tensor `w` into `out` (`count` ×
    /// the view's row length), the values `read_f32` gives for them. May be called from several
    /// threads at once. The default reads the whole view and copies the rows; a source that can
    /// read rows alone overrides it. Throws cardsim::Error naming the tensor when the rows are
    /// past the view or `out` has the wrong size.
    virtual void read_rows_f32(W w, const View& view, std::size_t first, std::size_t count,
                               std::span<float> out) const;
    /// Tells the source that tensor `w` will not be read again soon, so memory it holds for it
    /// (mapped pages) may be given back; reading it later still works. Does nothing by default.
    virtual void release(W) const {}

    /// The shape `view` reads of tensor `w`; throws cardsim::Error naming the tensor if it does not fit.
    ViewShape view_of(W w, const View& view) const;
    /// The elements `view` reads of tensor `w`, in f32.
    std::vector<float> values_f32(W w, const View& view) const;
};

} // namespace cardsim::graph
