#pragma once
// The functional side of the card's units: what each opcode computes on its operands' bytes,
// through the kernels every unit and the golden executor share.

#include "engine/card/card_config.hpp"
#include "sim/card/card_context.hpp"

namespace cardsim::sim {

/// The results of every opcode on a card of `config` (its weight format and keep formats), as the
/// card's units compute them in full runs. Throws cardsim::Error for a weight format the matvec
/// does not run.
Execute make_executor(const card::CardConfig& config);

} // namespace cardsim::sim
