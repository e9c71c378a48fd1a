#pragma once
// The semantic check of a program: every command against its opcode's named slots (dims against
// operand sizes, flags, the unit that runs it), the header against the memory map, and the host
// map against the commands (vocabulary, positions, caches). `decode` runs the part that needs no
// card config; the card runs all of it, with the weight, cache and state formats of its config,
// before it starts (sim::simulate), so a program that decodes cleanly cannot make a unit read or
// write outside an operand.

#include "engine/card/card_config.hpp"
#include "engine/program/program.hpp"

#include <string>

namespace cardsim::program {

/// Checks `p` (read from `file`, named in errors) and throws cardsim::Error naming the file, the
/// command, its opcode, the slot and what was expected when: a dim is 0 where the opcode needs one
/// or past 2^32; an operand's size disagrees with the dims (`out` of a Matvec holds rows × n1 f32);
/// a flag belongs to another opcode; the unit does not run the opcode; the header's arena is not
/// the arena region's size; the program region is not the card part's size; the host map's vocab
/// is below 2 or past the embedding table's rows, or its positions are not the caches'.
/// With `config` it also checks the packed weights, caches and states against the config's
/// formats, and the regions against the card's DDR and SRAM capacity.
void validate(const Program& p, const card::CardConfig* config, const std::string& file);

} // namespace cardsim::program
