#pragma once
// The report page of a trace diff: the verdict and the total first, then where the change is
// (per unit kind and per phase, with charts of both sides), the data verdict, the header and
// config keys that differ, and the commands whose own cycles moved; one self-contained HTML file
// with the same contents as `cardsim trace diff`'s text report.

#include "traces/diff.hpp"
#include "traces/system_diff.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace cardsim::traces::report {

/// The page of `report` as HTML text; `name_a` and `name_b` name the reference and the trace
/// under test.
std::string diff_page(const DiffReport& report, std::string_view name_a, std::string_view name_b);

/// Writes `diff_page(...)` to `destination` atomically.
void write_diff_page(const std::filesystem::path& destination, const DiffReport& report,
                     std::string_view name_a, std::string_view name_b);

/// The page of two systems' diff: the verdict and the links (messages, bytes and busy cycles on
/// each side), then a section per card (`card-K`, its ids prefixed `cardK-`) with what
/// `diff_page` shows of that card, and the text report.
std::string system_diff_page(const SystemDiffReport& report, std::string_view name_a,
                             std::string_view name_b);

/// Writes `system_diff_page(...)` to `destination` atomically.
void write_system_diff_page(const std::filesystem::path& destination, const SystemDiffReport& report,
                            std::string_view name_a, std::string_view name_b);

} // namespace cardsim::traces::report
