#include "traces/lexical.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

namespace cardsim::traces {
namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";

/// The value of one lowercase hex digit, or -1.
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/// True for 0-9.
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

} // namespace

std::string hex16(std::uint64_t v) {
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4)
        s[static_cast<std::size_t>(i)] = hex_digits[v & 0xf];
    return s;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
    if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        if (!is_digit(c)) return std::nullopt;
        auto d = static_cast<std::uint64_t>(c - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return v;
}

std::optional<std::uint64_t> parse_hex(std::string_view s, std::size_t digits) {
    if (s.size() != digits || digits == 0 || digits > 16) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : s) {
        int d = hex_value(c);
        if (d < 0) return std::nullopt;
        v = (v << 4) | static_cast<std::uint64_t>(d);
    }
    return v;
}

std::optional<std::string> format_clock(double mhz) {
    if (!std::isfinite(mhz) || mhz <= 0) return std::nullopt;
    std::array<char, 400> buf{};
    auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), mhz, std::chars_format::fixed);
    if (ec != std::errc{}) return std::nullopt;
    return std::string(buf.data(), end);
}

std::optional<double> parse_clock(std::string_view s) {
    auto dot = s.find('.');
    auto whole = s.substr(0, dot);
    if (!parse_u64(whole)) return std::nullopt;
    if (dot != std::string_view::npos) {
        auto frac = s.substr(dot + 1);
        if (frac.empty()) return std::nullopt;
        for (char c : frac)
            if (!is_digit(c)) return std::nullopt;
    }
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
    if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

std::string escape(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (char ch : bytes) {
        auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c <= 0x7e && c != '\\') {
            out += ch;
        } else {
            out += "\\x";
            out += hex_digits[c >> 4];
            out += hex_digits[c & 0xf];
        }
    }
    return out;
}

std::optional<std::string> unescape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            out += text[i];
            continue;
        }
        if (i + 4 > text.size() || text[i + 1] != 'x') return std::nullopt;
        int hi = hex_value(text[i + 2]), lo = hex_value(text[i + 3]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 3;
    }
    return out;
}

} // namespace cardsim::traces
