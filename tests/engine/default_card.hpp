#pragma once
// The default card's capabilities for shim tests.

#include "engine/shim/capabilities.hpp"

namespace cardsim::test {

/// The capabilities of the default D5005 card: the decoder units, no optional features.
inline shim::Capabilities default_card() {
    using program::Unit;
    shim::Capabilities c;
    for (auto u : {Unit::Dma, Unit::Matvec, Unit::Attention, Unit::Conv, Unit::Gates, Unit::Delta,
                   Unit::SigmoidGate, Unit::Norm, Unit::Rotation, Unit::CacheAppend, Unit::Add, Unit::Embed,
                   Unit::Argmax, Unit::SiluMul, Unit::L2Norm, Unit::GatedNorm})
        c.set(u);
    return c;
}

} // namespace cardsim::test
