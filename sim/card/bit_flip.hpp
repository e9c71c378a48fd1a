#pragma once
// A deliberate error: one bit flipped in what one command writes, after it computes. A harness uses
// it to see that the bit-exact check catches a single-bit error and names the value that holds it.

#include <cstdint>

namespace cardsim::sim {

/// Flip bit `bit` of byte `byte` of the first operand command `command` (its index in the program)
/// writes in step `step`. A byte past the operand is the operand's last byte.
struct BitFlip {
    std::uint32_t step = 0;
    std::uint32_t command = 0;
    std::uint64_t byte = 0;
    std::uint8_t bit = 0;
};

} // namespace cardsim::sim
