#pragma once
// The numerics knob point of a card: which arithmetic contract its units keep.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::numerics {

/// How activations are grouped under one power-of-two scale.
enum class ActScaling {
    Sub32,    ///< blocks of 32 values, 4 significand bits
    PerBlock, ///< the weights' blocks, wide significands
};

/// How many words quantise an activation: one, or a second for the residual of the first.
enum class Words { One, Two };

/// How the Gated-DeltaNet state is kept between steps.
enum class StateFormat { F32, F16 };

/// How attention caches are kept.
enum class CacheFormat { F16, Int8, Int8Hadamard };

/// How the attention unit computes: float vector math, or the integer array.
enum class AttentionMath { Vector, Array };

/// One point of the numerics knobs: a card config value; a sweep crosses them.
struct EngineNumerics {
    ActScaling scaling = ActScaling::PerBlock;
    Words activations = Words::One;
    StateFormat state = StateFormat::F32;
    CacheFormat cache = CacheFormat::F16;
    AttentionMath attention = AttentionMath::Vector;
    friend bool operator==(const EngineNumerics&, const EngineNumerics&) = default;
};

/// The config spelling of each knob value (`sub32`, `per_block`, `one`, `two`, `f32`, `f16`,
/// `int8`, `int8_hadamard`, `vector`, `array`).
std::string_view name(ActScaling v);
std::string_view name(Words v);
std::string_view name(StateFormat v);
std::string_view name(CacheFormat v);
std::string_view name(AttentionMath v);

/// Sets the knob called `key` (`scaling`, `activations`, `state`, `cache`, `attention`) of `point`
/// from its config spelling. Returns a sentence saying what was expected when the key or the value
/// is unknown, and nothing when it was set.
std::optional<std::string> set_knob(EngineNumerics& point, std::string_view key, std::string_view value);

/// The point as `scaling=sub32 activations=one state=f32 cache=f16 attention=vector`.
std::string to_string(const EngineNumerics& point);

/// The default point with each `key=value` of `assignments` set in order. Throws cardsim::Error
/// naming `where` (e.g. `--knob`) and the assignment when one is malformed or unknown.
EngineNumerics parse_point(std::span<const std::string> assignments, std::string_view where);

/// Every knob point (the cross product of all knob values), in declaration order.
std::vector<EngineNumerics> all_points();

} // namespace cardsim::numerics
