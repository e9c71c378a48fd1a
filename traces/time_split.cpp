#include "traces/time_split.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::traces {

void TimeByUnit::add(std::string_view unit, const TimeSplit& split, std::uint64_t commands) {
    auto it = std::find_if(units_.begin(), units_.end(), [&](const UnitTime& u) { return u.unit == unit; });
    if (it == units_.end()) it = units_.insert(units_.end(), UnitTime{std::string(unit), 0, {}});
    it->commands += commands;
    it->sum += split;
}

std::vector<std::pair<std::string, std::string>> time_lines(std::span<const UnitTime> units) {
    std::vector<const UnitTime*> order;
    for (auto& u : units)
        order.push_back(&u);
    std::sort(order.begin(), order.end(), [](const UnitTime* a, const UnitTime* b) {
        return a->sum.total() != b->sum.total() ? a->sum.total() > b->sum.total() : a->unit < b->unit;
    });
    std::vector<std::pair<std::string, std::string>> out;
    for (const UnitTime* up : order) {
        const UnitTime& u = *up;
        const std::uint64_t total = u.sum.total();
        std::string text = fmt::format("{} command{}, {} cycles from ready to end", u.commands,
                                       u.commands == 1 ? "" : "s", total);
        const TimePart top = u.sum.largest();
        std::string parts;
        for (auto p : time_parts) {
            if (u.sum[p] == 0) continue;
            parts += fmt::format("{}{} {:.1f} %{}", parts.empty() ? ": " : ", ", name(p),
                                 100.0 * double(u.sum[p]) / double(total), p == top ? " (the most)" : "");
        }
        out.emplace_back("time in " + u.unit, text + parts);
    }
    return out;
}

} // namespace cardsim::traces
