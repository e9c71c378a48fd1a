#pragma once
// A checkpoint's digest: what a program's host map records of the checkpoint it was compiled from,
// so a run given both can tell that they belong together.

#include "models/checkpoint.hpp"

#include <cstdint>

namespace cardsim::models {

/// xxh64 (seed 0) over config.json and every safetensors file of `checkpoint`, in file-name order,
/// each as its name, its size (u64 little-endian) and its bytes. Reads the files through the page
/// cache (their mapped pages are not touched). Throws cardsim::Error naming a file it cannot read.
std::uint64_t checkpoint_digest(const Checkpoint& checkpoint);

} // namespace cardsim::models
