#pragma once
// Running one simulation in a forked child: SystemC elaborates one simulation per process, so a
// command that simulates two programs (a prefill chunk's and decode's) runs the first in a child.

#include <functional>
#include <string>

namespace cardsim::cli {

/// Forks (before this process elaborates anything), runs `f` in the child and returns the text it
/// returned; a child that throws or dies is a cardsim::Error carrying its message.
std::string in_child(const std::function<std::string()>& f);

} // namespace cardsim::cli
