#include "engine/graph/weight_source.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <functional>
#include <numeric>

namespace cardsim::graph {

std::variant<ViewShape, std::string> view_shape(std::span<const std::size_t> shape, const View& view) {
    // A matrix of [d0 · … · dn−2, dn−1]: a fused 3-D expert tensor [E, 2I, H] is E · 2I rows of H.
    std::size_t rows = shape.size() <= 1 ? (shape.empty() ? 1 : shape[0])
                                         : std::accumulate(shape.begin(), shape.end() - 1, std::size_t{1},
                                                           std::multiplies<>());
    std::size_t row_len = shape.size() <= 1 ? 1 : shape.back();
    if (auto* r = std::get_if<RowRange>(&view)) {
        if (r->first > rows || r->count > rows - r->first)
            return fmt::format("rows {}..{} lie past its {} rows", r->first, r->first + r->count, rows);
        return ViewShape{r->count, row_len};
    }
    if (auto* h = std::get_if<HeadPart>(&view)) {
        if (h->stride == 0 || rows % h->stride != 0)
            return fmt::format("a head stride of {} rows does not divide its {} rows", h->stride, rows);
        if (h->offset > h->stride || h->width > h->stride - h->offset)
            return fmt::format("rows {}..{} of each head lie past its stride of {}", h->offset,
                               h->offset + h->width, h->stride);
        if (h->heads && (h->first_head > rows / h->stride || h->heads > rows / h->stride - h->first_head))
            return fmt::format("heads {}..{} lie past its {} heads of {} rows", h->first_head,
                               h->first_head + h->heads, rows / h->stride, h->stride);
        return ViewShape{(h->heads ? h->heads : rows / h->stride) * h->width, row_len};
    }
    if (auto* c = std::get_if<ColumnRange>(&view)) {
        if (c->stride == 0) return std::string("a column stride of 0");
        if (c->count == 0 || c->first >= row_len || (c->count - 1) * c->stride > row_len - 1 - c->first)
            return fmt::format("columns {}..{} (every {}) lie past its {} columns", c->first,
                               c->first + (c->count ? c->count - 1 : 0) * c->stride + 1, c->stride, row_len);
        if (c->rows && (c->first_row > rows || c->rows > rows - c->first_row))
            return fmt::format("rows {}..{} lie past its {} rows", c->first_row, c->first_row + c->rows,
                               rows);
        return ViewShape{c->rows ? c->rows : rows, c->count};
    }
    return ViewShape{rows, row_len};
}

bool transposed(const View& view) {
    return std::visit([](const auto& x) { return x.transpose; }, view);
}

std::string rows_key(const View& view) {
    if (auto* r = std::get_if<RowRange>(&view)) return fmt::format("r{}+{}", r->first, r->count);
    if (auto* h = std::get_if<HeadPart>(&view))
        return h->heads
                   ? fmt::format("h{}/{}+{}@{}+{}", h->stride, h->offset, h->width, h->first_head, h->heads)
                   : fmt::format("h{}/{}+{}", h->stride, h->offset, h->width);
    if (auto* c = std::get_if<ColumnRange>(&view))
        return c->stride == 1 && c->rows == 0
                   ? fmt::format("c{}+{}", c->first, c->count)
                   : fmt::format("c{}+{}/{}@r{}+{}", c->first, c->count, c->stride, c->first_row, c->rows);
    return "w";
}

std::vector<float> transpose(std::span<const float> values, std::size_t rows, std::size_t cols) {
    std::vector<float> t(values.size());
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            t[j * rows + i] = values[i * cols + j];
    return t;
}

std::uint64_t state_bytes(const State& s, std::uint64_t max_positions,
                          const std::function<std::size_t(std::size_t head_dim)>& cache_row_bytes,
                          std::size_t state_element_bytes) {
    return std::visit(
        [&](const auto& st) -> std::uint64_t {
            using T = std::decay_t<decltype(st)>;
            if constexpr (std::is_same_v<T, KeyCache> || std::is_same_v<T, ValueCache>)
                return max_positions * st.kv_heads * cache_row_bytes(st.head_dim);
            else if constexpr (std::is_same_v<T, ConvWindow>)
                return std::uint64_t(st.kernel - 1) * st.channels * 4;
            else
                return std::uint64_t(st.heads) * st.dk * st.dv * state_element_bytes;
        },
        s);
}

ViewShape WeightSource::view_of(W w, const View& view) const {
    auto s = view_shape(shape(w), view);
    if (auto* why = std::get_if<std::string>(&s))
        throw Error(fmt::format("tensor {}: the view {}", name(w), *why));
    return std::get<ViewShape>(s);
}

void WeightSource::read_rows_f32(W w, const View& view, std::size_t first, std::size_t count,
                                 std::span<float> out) const {
    const ViewShape vs = view_of(w, view);
    if (first > vs.rows || count > vs.rows - first || out.size() != count * vs.row_len)
        throw Error(fmt::format("tensor {}: rows {} .. {} into {} values: the view has {} rows of {}",
                                name(w), first, first + count, out.size(), vs.rows, vs.row_len));
    auto all = values_f32(w, view);
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(first * vs.row_len), out.size(), out.begin());
}

std::vector<float> WeightSource::values_f32(W w, const View& view) const {
    std::vector<float> out(view_of(w, view).numel());
    read_f32(w, view, out);
    return out;
}

} // namespace cardsim::graph
