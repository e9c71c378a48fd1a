#pragma once
// Where each command of a program sits in the model, as far as the program's host map tells: the
// layer it belongs to (from the copies of the layer probes, `cardsim compile --check-layers`) and
// the value a copy command hands to the host. `cardsim trace diff --program` labels commands with it.

#include "engine/program/program.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cardsim::traces {

/// One command's place in the model. `layer` is `3` for a command of layer 3 (from after the copy
/// of layer 2's probe up to the copy of layer 3's), `1-3` when the layers in between are not
/// observed, `<=0` before the first observed layer's copy (the embedding included), `>7` after the
/// last (the final norm, the head, the output copies); empty when the program observes no layer.
/// `copies` names what a copy to the io region hands to the host (`logits`, `probe of layer 3`),
/// empty for every other command.
struct CommandSite {
    std::string layer;
    std::string copies;
    friend bool operator==(const CommandSite&, const CommandSite&) = default;
};

/// The sites of a program's commands, by position in its command list (the trace's `pc`).
struct ProgramSites {
    std::uint64_t program = 0;         ///< the program's digest, as traces name it
    std::vector<CommandSite> commands; ///< one per command of the program

    /// The site of the command at `pc`, or nothing past the end.
    const CommandSite* at(std::uint64_t pc) const {
        return pc < commands.size() ? &commands[static_cast<std::size_t>(pc)] : nullptr;
    }
};

/// The sites of every command of `program`, from its commands' io writes and its host map.
ProgramSites sites_of(const program::Program& program);

} // namespace cardsim::traces
