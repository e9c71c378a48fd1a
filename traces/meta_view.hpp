#pragma once
// How a person reads a trace's meta values: short ones as they are, long ones (a card's TOML, a
// run's summary as JSON) summarised, or shown whole with their lines and structure laid out.

#include <optional>
#include <string>
#include <string_view>

namespace cardsim::traces {

/// The longest meta value shown on its line as it is.
inline constexpr std::size_t meta_inline_limit = 100;

/// The columns a JSON value shown whole is laid out in: a member or item that fits them (with its
/// indent) stays on one line.
inline constexpr std::size_t meta_layout_width = 140;

/// Whether `value` reads on one line as it is: at most meta_inline_limit bytes, none of them a
/// line break or another control byte.
bool meta_is_short(std::string_view value);

/// A value in a few words: a short value as `value` (escaped as the file spells it); else a JSON
/// object or array by its member or item count (`a JSON object of 25 members, 1277 bytes`), text
/// of several lines by its line count (`330 lines, 9604 bytes`), anything else by its size and
/// first bytes.
std::string meta_brief(std::string_view value);

/// The whole value for a person, every line starting with `indent` and ending in LF: a JSON value
/// laid out one member or item a line (2 spaces a level; one that fits meta_layout_width columns,
/// or an array of scalars, on one line), other
/// text line by line; bytes other than printable ASCII, tab and LF written as `\xHH`.
std::string meta_whole(std::string_view value, std::string_view indent);

/// How a key's two values differ, in one short line (nothing means the key is absent on that side):
/// both short, `A `x`, B `y``; two JSON objects, the top-level members that differ (`members
/// cycles, seconds differ (2 of 25)`); two texts of several lines, how many lines differ and the
/// first (`2 of 330 lines differ; the first, line 1: A `...`, B `...``); else the two briefs.
std::string meta_difference(std::optional<std::string_view> a, std::optional<std::string_view> b);

} // namespace cardsim::traces
