#pragma once
// Blessing: replacing a golden trace by a new run's trace deliberately, saying what changed.

#include <filesystem>
#include <string>

namespace cardsim::traces {

/// A bless about to happen: the new trace, read and checked, and what replacing the golden
/// trace by it changes.
struct Blessing {
    std::filesystem::path fresh, golden;
    std::string bytes;   ///< the new trace file's content, which becomes the golden file
    std::string changes; ///< the diff of golden (A) against new (B) at zero tolerance, or why there is none
    bool identical = false; ///< the golden file already holds exactly these bytes
};

/// Reads and checks the trace `fresh` (cardsim::Error when it is not a valid trace; nothing is
/// touched then) and describes its change against `golden`: the diff when golden is a valid trace,
/// otherwise that golden is absent or invalid (and why).
Blessing prepare_bless(const std::filesystem::path& fresh, const std::filesystem::path& golden);

/// Replaces the golden file by the new trace's bytes atomically (a temporary beside it, renamed
/// over it); does nothing when they are identical.
void apply(const Blessing& blessing);

} // namespace cardsim::traces
