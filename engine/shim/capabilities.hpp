#pragma once
// What a card can run: the units it has and what each supports. The shim's answers derive from
// this alone, and a card config derives it (`engine/card`), so adding a unit to a config changes
// which models the card runs.

#include "engine/program/opcode.hpp"

#include <bitset>
#include <cstddef>

namespace cardsim::shim {

/// The units a card has and the features of each that the shim's answers depend on.
struct Capabilities {
    std::bitset<program::unit_count> units; ///< which units exist
    bool matvec_bias = false;               ///< the matvec adds a bias vector
    bool matvec_scale = false;              ///< the matvec scales its result by a factor
    bool matvec_relu = false;               ///< the matvec has a ReLU epilogue
    bool embedding_scale = false;           ///< the embed unit scales what it reads
    bool attention_window = false;          ///< attention over the cache takes a sliding window
    bool attention_sinks = false;           ///< ... attention sinks
    bool attention_softcap = false;         ///< ... soft-capped scores
    bool attention_mask = false;            ///< ... an arbitrary mask
    bool logit_softcap = false;             ///< a unit caps logits
    bool experts = false;                   ///< a unit routes rows to experts
    bool rotation_yarn = false;             ///< the rotation unit takes YaRN's frequencies and scale
    bool swiglu_clamp = false;              ///< the SiLU-multiply unit computes the clamped SwiGLU
    bool mla = false;                       ///< a unit runs multi-head latent attention
    std::size_t cards = 1;                  ///< cards the engine runs on

    /// Whether the card has unit `u`.
    bool has(program::Unit u) const { return units.test(static_cast<std::size_t>(u)); }
    /// Adds or removes unit `u`.
    void set(program::Unit u, bool present = true) { units.set(static_cast<std::size_t>(u), present); }
};

} // namespace cardsim::shim

namespace cardsim::card {
struct CardConfig;
}

namespace cardsim::shim {

/// The capabilities of a card config: its units (count > 0), the matvec's bias and scale, the
/// embed unit's scale, the attention unit's window, sinks and soft cap, ReLU, experts and cards.
/// No config key names an arbitrary attention mask, a logit soft cap or multi-head latent attention
/// yet: a card never has those.
Capabilities capabilities(const card::CardConfig& c);

} // namespace cardsim::shim
