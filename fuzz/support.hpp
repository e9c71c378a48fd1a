#pragma once
// What every fuzz target shares: a parser's bad input is a cardsim::Error (its message names the
// place); anything else escaping it (another exception type, a crash, a sanitizer report, a hang)
// is a finding libFuzzer stops on.

#include "engine/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace cardsim::fuzz {

/// The fuzzer's input as bytes and as text.
inline std::span<const std::byte> bytes(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const std::byte*>(data), size};
}
inline std::string_view text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

/// Runs `f`, taking a cardsim::Error (a refusal of bad input) as the expected outcome.
template <class F>
int refusing(F&& f) {
    try {
        f();
    } catch (const Error&) {
    }
    return 0;
}

} // namespace cardsim::fuzz
