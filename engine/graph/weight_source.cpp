#include "engine/graph/weight_source.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <functional>
#include <numeric>

namespace cardsim::graph {

std::variant<ViewShape, std::string> view_shape(std::span<const std::size_t> shape, const View& view) {
    std::size_t rows = shape.empty() ? 1 : shape[0];
    std::size_t row_len = shape.size() <= 1 ? 1
                                            : std::accumulate(shape.begin() + 1, shape.end(), std::size_t{1},
                                                              std::multiplies<>());
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
        return ViewShape{rows / h->stride * h->width, row_len};
    }
    return ViewShape{rows, row_len};
}

ViewShape WeightSource::view_of(W w, const View& view) const {
    auto s = view_shape(shape(w), view);
    if (auto* why = std::get_if<std::string>(&s))
        throw Error(fmt::format("tensor {}: the view {}", name(w), *why));
    return std::get<ViewShape>(s);
}

std::vector<float> WeightSource::values_f32(W w, const View& view) const {
    std::vector<float> out(view_of(w, view).numel());
    read_f32(w, view, out);
    return out;
}

} // namespace cardsim::graph
