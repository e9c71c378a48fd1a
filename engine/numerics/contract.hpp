#pragma once
// The numerics contract of a knob point: what the card's units keep and compute at that point,
// as a value the shim reports and `cardsim numerics` prints.

#include "engine/numerics/keep.hpp"
#include "engine/numerics/knob.hpp"
#include "engine/numerics/scheme.hpp"

#include <optional>
#include <string>
#include <variant>

namespace cardsim::numerics {

/// An operand quantised under a scheme.
struct Quantized {
    Scheme scheme;
    friend bool operator==(const Quantized&, const Quantized&) = default;
};
/// An operand taken as it is kept.
struct Kept {
    Keep keep;
    friend bool operator==(const Kept&, const Kept&) = default;
};
/// How the attention unit takes an operand.
using Taken = std::variant<Quantized, Kept>;

/// The array attention's operands: its query, its cached keys and values, its softmax weights.
struct AttentionNumerics {
    Taken queries;
    Taken keys_values;
    Taken weights;
    friend bool operator==(const AttentionNumerics&, const AttentionNumerics&) = default;
};

/// How far a fused unit's outputs may be from running its parts as separate commands, in ulps of
/// f32; EXACT (0) means bit for bit.
struct Bound {
    double ulps = 0;
    friend bool operator==(const Bound&, const Bound&) = default;
};
inline constexpr Bound EXACT{0};

/// The contract of one knob point.
struct Contract {
    std::string point;                          ///< `the engine: scaling=... attention=...`
    std::optional<Scheme> activations;          ///< how the matvec unit quantises its input row
    Keep cache = Keep::F16;                     ///< how attention caches are kept
    Keep state = Keep::F32;                     ///< how the Gated-DeltaNet state is kept
    std::optional<AttentionNumerics> attention; ///< the array attention's operands; none for vector math
    Bound fused = EXACT;                        ///< fused classes against their parts
    int accumulator_bits = 64;                  ///< places of the exact sum's window
    friend bool operator==(const Contract&, const Contract&) = default;
};

/// The contract of `point`: activations in blocks of 32 with NARROW_BITS (sub32) or in the
/// weights' blocks with WIDE_BITS (per_block), in one or two words; the cache and state keep
/// formats; for array attention the query quantised like the activations but a whole head a block
/// where the activations take the weights' blocks, the keys and values as the cache keeps them,
/// and the weights under LeastPowerOfTwoOver255 per VALUE_BLOCK positions; fused classes exact; a
/// 64-place accumulator.
Contract contract(const EngineNumerics& point);

/// `Quantized(Scheme { ... })` or `Kept(F16)`.
std::string to_string(const Taken& t);

/// The contract as text, one field a line, then the router's and the expert combine's rules
/// (router.hpp, combine.hpp), the same at every point.
std::string to_string(const Contract& c);

} // namespace cardsim::numerics
