#pragma once
// xxh64 (seed 0) digests of written bytes, through the xxHash library.

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace cardsim::traces {

/// The digest of no bytes: xxh64("", seed 0).
inline constexpr std::uint64_t empty_digest = 0xef46db3751d8e999ULL;

/// xxh64 with seed 0 of `bytes`.
std::uint64_t xxh64(std::span<const std::uint8_t> bytes);

/// xxh64 with seed 0 of `bytes`.
std::uint64_t xxh64(std::span<const std::byte> bytes);

/// An xxh64 (seed 0) over bytes fed in pieces; equals `xxh64` of their concatenation.
class Xxh64 {
public:
    Xxh64();
    /// Appends `bytes` to the digested sequence.
    void update(std::span<const std::uint8_t> bytes);
    /// The digest of everything fed so far (feeding may continue).
    std::uint64_t digest() const;

private:
    XXH64_state_t state_;
};

} // namespace cardsim::traces
