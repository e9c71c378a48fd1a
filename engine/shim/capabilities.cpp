#include "engine/shim/capabilities.hpp"

#include "engine/card/card_config.hpp"

namespace cardsim::shim {

Capabilities capabilities(const card::CardConfig& c) {
    Capabilities caps;
    for (auto kind : card::all_unit_kinds)
        caps.set(kind, c.units.has(kind));
    caps.matvec_bias = c.units.matvec.bias;
    caps.matvec_scale = c.units.matvec.scale;
    caps.matvec_relu = c.capabilities.relu;
    caps.embedding_scale = c.units.embed.scale;
    caps.attention_window = c.units.attention.window;
    caps.attention_sinks = c.units.attention.sinks;
    caps.attention_softcap = c.units.attention.softcap;
    caps.experts = c.capabilities.experts;
    caps.rotation_yarn = c.units.rotation.yarn;
    caps.swiglu_clamp = c.units.silu_mul.clamp;
    caps.cards = c.system.cards;
    return caps;
}

} // namespace cardsim::shim
