#pragma once
// A matvec command's epilogue flags and the graph's Gemm epilogue they encode: the one mapping
// lowering writes and the card's matvec reads.

#include "engine/graph/graph.hpp"
#include "engine/program/opcode.hpp"

#include <cstdint>

namespace cardsim::program {

/// The Matvec flags of epilogue `e` (`flag::Accumulate`, `EpilogueGelu`, `EpilogueRelu`, or none).
std::uint32_t epilogue_flags(graph::Epilogue e);

/// The epilogue a Matvec command's `flags` encode (flags with no epilogue bit: None).
graph::Epilogue epilogue_of(std::uint32_t flags);

} // namespace cardsim::program
