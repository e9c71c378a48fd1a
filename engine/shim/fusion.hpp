#pragma once
// The fusion pass: groups a graph's ops into the shared table's classes, as the card would run
// them, and the per-op and per-group checks that decide what may merge (the seed's `fits`).

#include "engine/graph/graph.hpp"
#include "engine/program/opcode.hpp"
#include "engine/shim/capabilities.hpp"
#include "engine/shim/class_id.hpp"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::shim {

/// Ops of a graph that run together: a class of the table, or one op on its own (`cls` empty).
/// `ops` are indices into `Graph::ops`, in order; they need not be adjacent.
struct Group {
    std::optional<ClassId> cls;
    std::vector<std::size_t> ops;
    friend bool operator==(const Group&, const Group&) = default;
};

/// A merge the pass considered and did not make, with the sentence saying why.
struct Declined {
    ClassId cls;
    std::vector<std::size_t> ops;
    std::string reason;
};

/// The outcome of the fusion pass: every op in exactly one group, groups ordered by first op.
struct Fusion {
    std::vector<Group> groups;
    std::vector<Declined> declined;
};

/// Whether `parts`, products of one activation, multiply by one checkpoint matrix the card streams
/// as one matvec: row ranges of one tensor following one another from its first row, or the two
/// halves of each head of one tensor, or the start of either (a merge grows a product at a time).
bool one_matrix(std::span<const graph::Weight> parts);

/// The sentence refusing a MergedQkv whose parts are not one matrix.
inline constexpr std::string_view not_one_matrix =
    "the engine streams one checkpoint matrix a matvec: row ranges of one tensor from its first row, or each "
    "head's two halves";

/// The sentence refusing a GluActMul whose activation is not a sigmoid.
inline constexpr std::string_view sigmoid_only = "the engine gates an attention's result by a sigmoid only";

/// Groups the ops of `g` into classes. Merges are made only where the card can run them
/// (`supports` Native and the group `fits`); a considered merge that fails is `declined`.
Fusion fuse(const graph::Graph& g, const Capabilities& caps);

/// Why the card cannot run `op`, as a sentence ("the engine has no unit for experts"), or nothing.
std::optional<std::string> fits(const graph::Op& op, const Capabilities& caps);

/// The opcode that runs `op` on its own, or nothing for ops no unit of any card runs.
std::optional<program::Opcode> opcode_of(const graph::Op& op);

/// The commands a group runs as: one for a Native class, one per op otherwise.
std::vector<program::Opcode> commands_of(const graph::Graph& g, const Group& group, const Capabilities& caps);

} // namespace cardsim::shim
