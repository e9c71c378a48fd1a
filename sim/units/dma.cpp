// The DMA unit: copies its source operand to its destination, byte for byte.

#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

#include <algorithm>
#include <cstring>

namespace cardsim::sim::units {
namespace {

class Dma final : public UnitOf<program::slots::Copy> {
    using S = program::slots::Copy; ///< the command slots this unit reads

public:
    Dma() : UnitOf(card::UnitKind::Dma) {}

    /// Bytes: the source's size.
    std::uint64_t work(const program::Command& c, const Step&) const override {
        return program::args<S>(c).operands.src.bytes;
    }

    void compute(const program::Command&, Operands operands) const override {
        auto o = program::each<S>(operands);
        std::memcpy(o.dst.data(), o.src.data(), std::min(o.src.size(), o.dst.size()));
    }
};

} // namespace

std::shared_ptr<const Unit> dma_unit(const card::CardConfig&) {
    return std::make_shared<Dma>();
}

} // namespace cardsim::sim::units
