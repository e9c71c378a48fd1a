#include "traces/xxh64.hpp"

namespace cardsim::traces {

std::uint64_t xxh64(std::span<const std::uint8_t> bytes) {
    return XXH64(bytes.data(), bytes.size(), 0);
}

std::uint64_t xxh64(std::span<const std::byte> bytes) {
    return XXH64(bytes.data(), bytes.size(), 0);
}

Xxh64::Xxh64() {
    XXH64_reset(&state_, 0);
}

void Xxh64::update(std::span<const std::uint8_t> bytes) {
    XXH64_update(&state_, bytes.data(), bytes.size());
}

std::uint64_t Xxh64::digest() const {
    return XXH64_digest(&state_);
}

} // namespace cardsim::traces
