#include "models/weight_source.hpp"

#include "engine/error.hpp"

#include <fmt/format.h>

namespace cardsim::models {
namespace {

/// Overloaded lambdas for `std::visit`.
template <class... F>
struct Overload : F... {
    using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

} // namespace

std::variant<ViewShape, std::string> view_shape(std::span<const std::size_t> shape, const graph::View& view) {
    const std::size_t rows = shape.empty() ? 1 : shape[0];
    std::size_t row_len = 1;
    for (std::size_t i = 1; i < shape.size(); ++i)
        row_len *= shape[i];
    return std::visit(
        Overload{
            [&](const graph::Whole&) -> std::variant<ViewShape, std::string> {
                return ViewShape{rows, row_len};
            },
            [&](const graph::RowRange& r) -> std::variant<ViewShape, std::string> {
                if (r.count == 0 || r.first > rows || r.count > rows - r.first)
                    return fmt::format("rows {}..{} do not lie inside its {} rows", r.first,
                                       r.first + r.count, rows);
                return ViewShape{r.count, row_len};
            },
            [&](const graph::HeadPart& h) -> std::variant<ViewShape, std::string> {
                if (h.stride == 0 || rows % h.stride != 0)
                    return fmt::format("heads of {} rows do not divide its {} rows", h.stride, rows);
                if (h.width == 0 || h.offset > h.stride || h.width > h.stride - h.offset)
                    return fmt::format("rows {}..{} of each head do not lie inside a head of {}", h.offset,
                                       h.offset + h.width, h.stride);
                return ViewShape{rows / h.stride * h.width, row_len};
            },
        },
        view);
}

std::string describe(const graph::View& view) {
    return std::visit(
        Overload{
            [](const graph::Whole& w) { return fmt::format("whole{}", w.transpose ? "ᵀ" : ""); },
            [](const graph::RowRange& r) {
                return fmt::format("rows {}..{}{}", r.first, r.first + r.count, r.transpose ? "ᵀ" : "");
            },
            [](const graph::HeadPart& h) {
                return fmt::format("heads of {}: rows {}..{} of each{}", h.stride, h.offset,
                                   h.offset + h.width, h.transpose ? "ᵀ" : "");
            },
        },
        view);
}

ViewShape WeightSource::view_of(graph::W w, const graph::View& view) const {
    if (w >= tensor_count())
        throw Error(
            fmt::format("weight {} does not exist: the checkpoint has {} tensors", w, tensor_count()));
    auto s = view_shape(shape(w), view);
    if (auto* why = std::get_if<std::string>(&s))
        throw Error(
            fmt::format("tensor `{}`: the view `{}` does not fit it: {}", name(w), describe(view), *why));
    return std::get<ViewShape>(s);
}

std::vector<double> WeightSource::values(graph::W w, const graph::View& view) const {
    std::vector<double> out(view_of(w, view).numel());
    read_f64(w, view, out);
    return out;
}

} // namespace cardsim::models
