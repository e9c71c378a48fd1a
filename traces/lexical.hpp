#pragma once
// The spellings of FORMAT.md's terminals: decimal and hex numbers, clock decimals, escaped text.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cardsim::traces {

/// `v` as 16 lowercase hex digits, most significant first.
std::string hex16(std::uint64_t v);

/// `s` as a u64 of FORMAT.md: "0" or a digit 1-9 then digits, at most 2^64 - 1; else nothing.
std::optional<std::uint64_t> parse_u64(std::string_view s);

/// `s` as exactly `digits` lowercase hex digits (at most 16); else nothing.
std::optional<std::uint64_t> parse_hex(std::string_view s, std::size_t digits);

/// A positive finite clock as the shortest fixed-notation decimal that reads back to the same
/// double (`300`, `331.25`). Nothing when `mhz` is not positive and finite.
std::optional<std::string> format_clock(double mhz);

/// `s` as a FORMAT.md decimal (u64, optionally `.` and digits) read to the nearest double; else
/// nothing.
std::optional<double> parse_clock(std::string_view s);

/// `bytes` with every byte outside 0x20-0x7E, and the backslash, written as `\xHH`.
std::string escape(std::string_view bytes);

/// The bytes `text` spells (`\xHH` decoded); nothing when a backslash is not followed by `x` and
/// two lowercase hex digits.
std::optional<std::string> unescape(std::string_view text);

} // namespace cardsim::traces
