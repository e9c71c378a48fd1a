#pragma once
// Which implementation each unit kind of a card runs: the registry the card's units look their
// behaviour up in. `standard` holds the C++ model of every kind (the files beside this one); `set`
// swaps one kind's implementation (an RTL model, a unit with a fault injected) for a run.

#include "engine/card/card_config.hpp"
#include "sim/units/unit.hpp"

#include <array>
#include <memory>

namespace cardsim::sim::units {

/// One implementation per unit kind. Copies share the implementations (they are immutable).
class UnitSet {
public:
    /// The C++ model of every unit kind for a card of `config` (its weight format, keep formats
    /// and knob point).
    static UnitSet standard(const card::CardConfig& config);

    /// Registers `unit` for its kind, replacing the one there.
    void set(std::shared_ptr<const Unit> unit);
    /// The implementation of `kind` (cardsim::Error if none is registered).
    const Unit& operator[](card::UnitKind kind) const;
    /// The implementation of `kind` as shared (null if none), to wrap it.
    std::shared_ptr<const Unit> shared(card::UnitKind kind) const;

private:
    std::array<std::shared_ptr<const Unit>, card::unit_kind_count> units_{};
};

} // namespace cardsim::sim::units
