#pragma once
// The dependencies of a command stream, from what its commands read and write.

#include "engine/program/program.hpp"

namespace cardsim::lower {

/// Sets every command's `deps` to the earlier commands it must wait for: the last writer of any
/// byte it reads (read after write), and the last writer and every reader since of any byte it
/// writes (write after write, write after read), in any region but the read-only weights. The
/// list is sorted and free of repeats; two commands that touch no common byte (or only read it)
/// get no dependency, so they may overlap. Runs in time proportional to the commands times the
/// accesses still live (an access fully overwritten is forgotten).
void add_dependencies(program::Program& p);

} // namespace cardsim::lower
