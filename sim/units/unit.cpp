#include "sim/units/unit.hpp"

#include <algorithm>

namespace cardsim::sim::units {

std::vector<Span> Unit::traffic(const program::Command& c, std::size_t k, const Step&) const {
    return {Span{0, c.operands.at(k).bytes}};
}

std::optional<IssueAfter> Unit::issue_after(const program::Command&, std::size_t) const {
    return std::nullopt;
}

std::uint64_t compute_cycles(std::uint64_t work, std::uint32_t width) {
    if (width == 0) width = 1;
    return std::max<std::uint64_t>(1, (work + width - 1) / width);
}

std::span<float> f32s(std::span<std::byte> b) {
    return {reinterpret_cast<float*>(b.data()), b.size() / 4};
}

std::span<const std::uint32_t> u32s(std::span<std::byte> b) {
    return {reinterpret_cast<const std::uint32_t*>(b.data()), b.size() / 4};
}

} // namespace cardsim::sim::units
