// The network unit: sends an operand to another card and receives one from it, over the card's
// QSFP ports. What it moves between cards is the system's business (sim/card/network.hpp, the
// links of sim/system/); as a unit it only reads what it sends and writes what it received, so
// its traffic is its operand and its compute is nothing (UnitModule moves the message's bytes).

#include "sim/units/kinds.hpp"
#include "sim/units/unit_of.hpp"

namespace cardsim::sim::units {
namespace {

class NetworkUnit final : public UnitOf<program::slots::Send, program::slots::Recv, program::slots::RecvAdd> {
public:
    NetworkUnit() : UnitOf(card::UnitKind::Network) {}

    /// No work of its own: its time is the link's (and its operand's memory traffic).
    std::uint64_t work(const program::Command&, const Step&) const override { return 0; }

    void compute(const program::Command&, Operands) const override {}
};

} // namespace

std::shared_ptr<const Unit> network_unit(const card::CardConfig&) {
    return std::make_shared<NetworkUnit>();
}

} // namespace cardsim::sim::units
