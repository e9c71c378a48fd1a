#include "models/view_text.hpp"

#include "engine/overload.hpp"

#include <fmt/format.h>

namespace cardsim::models {

std::string describe(const graph::View& view) {
    return std::visit(
        Overload{
            [](const graph::Whole& w) { return fmt::format("whole{}", w.transpose ? "ᵀ" : ""); },
            [](const graph::RowRange& r) {
                return fmt::format("rows {}..{}{}", r.first, r.first + r.count, r.transpose ? "ᵀ" : "");
            },
            [](const graph::HeadPart& h) {
                return fmt::format("heads {}of {}: rows {}..{} of each{}",
                                   h.heads ? fmt::format("{}..{} ", h.first_head, h.first_head + h.heads)
                                           : "",
                                   h.stride, h.offset, h.offset + h.width, h.transpose ? "ᵀ" : "");
            },
            [](const graph::ColumnRange& c) {
                const std::string rows =
                    c.rows ? fmt::format(" of rows {}..{}", c.first_row, c.first_row + c.rows) : "";
                if (c.stride == 1)
                    return fmt::format("columns {}..{}{}{}", c.first, c.first + c.count, rows,
                                       c.transpose ? "ᵀ" : "");
                return fmt::format("{} columns from {} every {}{}{}", c.count, c.first, c.stride, rows,
                                   c.transpose ? "ᵀ" : "");
            },
        },
        view);
}

} // namespace cardsim::models
