#pragma once
// The card's command processor: fetches the program from DDR, decodes it, keeps a dependency
// scoreboard and issues commands in order to free units, letting independent commands overlap.

#include "sim/card/card_context.hpp"
#include "sim/card/unit_module.hpp"

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <vector>

namespace cardsim::sim {

/// Runs one step of the program: one DDR read of the program region (its fetch), then for each
/// command in order: wait until every command it depends on has completed (the scoreboard), wait
/// until a unit of its kind is free, spend the issue cycles, and hand it over. Issue is in order;
/// a command whose unit is busy stalls those behind it, as an in-order issue stage does. The step
/// ends when every command has completed. A command for a unit the card lacks is a bus error; a
/// command issued while another that touches its bytes (one of the two writing) is in flight is a
/// race (sim/card/hazard.hpp), and stops the run naming both.
/// Each command's waits are handed to its unit with it (TimeSplit: deps, unit, issue, from the
/// cycle the issue stage reached it: after it handed over the command before, or after the fetch).
class CommandProcessor : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<CommandProcessor> ddr;

    CommandProcessor(const sc_core::sc_module_name& name, CardContext& context,
                     std::vector<UnitModule*> units);

    /// Runs the program once (call from a SystemC thread); returns false when a bus error stopped it.
    bool run_step();

private:
    CardContext& ctx_;
    std::vector<UnitModule*> units_;
    tlm::tlm_generic_payload payload_;
};

} // namespace cardsim::sim
