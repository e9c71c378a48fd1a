#pragma once
// The shim's answer for a fusion class: run it as one unit, as separate commands, or not at all.

#include "engine/shim/capabilities.hpp"
#include "engine/shim/class_id.hpp"

#include <string>
#include <variant>

namespace cardsim::shim {

/// The card runs the class as one unit.
struct Native {
    friend bool operator==(const Native&, const Native&) = default;
};
/// The card runs the class's parts as commands of their own.
struct Decompose {
    friend bool operator==(const Decompose&, const Decompose&) = default;
};
/// The card does not run the class; `reason` says why, as a sentence.
struct Refuse {
    std::string reason;
    friend bool operator==(const Refuse&, const Refuse&) = default;
};

/// The answer for one class.
using Support = std::variant<Native, Decompose, Refuse>;

/// How the shim begins every refusal of an op the engine has no unit for.
inline constexpr std::string_view no_unit = "the engine has no unit for ";

/// The answer for `c` on a card with `caps`. Derived from the capabilities: the four classes the
/// card merges are Native when their unit exists; a class refused for a missing feature becomes
/// Native when the card has it; classes that describe another kind of engine (kernel launches,
/// flash kernels, host-resident caches, sampling) are refused whatever the card has.
Support supports(ClassId c, const Capabilities& caps);

/// The answer for one attention over the cache that uses the variants named (a sliding window,
/// sinks, a soft cap): Native when the card has each of them; a refusal names those it lacks. The
/// class AttentionVariantsInline as a whole (`supports`) needs all three.
Support attention_variants(const Capabilities& caps, bool window, bool sinks, bool softcap);

/// `Native`, `Decompose` or `Refuse: <reason>`.
std::string to_string(const Support& s);

} // namespace cardsim::shim
