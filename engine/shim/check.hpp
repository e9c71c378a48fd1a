#pragma once
// The whole-model check: what of a graph the card runs as one unit, what it decomposes into which
// commands, and every refusal, with the verdict.

#include "engine/graph/graph.hpp"
#include "engine/shim/fusion.hpp"
#include "engine/shim/support.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cardsim::shim {

/// One reason the card cannot run a model, at a place in it.
struct Refusal {
    /// Where in the model; none for a refusal of the model as a whole (it does not fit the DDR,
    /// its arena does not fit the SRAM).
    std::optional<graph::Site> site;
    std::string reason;
    /// `layer 3, ffn: the engine has no unit for experts` (`head: ...` outside layers, `model:
    /// ...` for the whole model).
    std::string text() const;
    friend bool operator==(const Refusal&, const Refusal&) = default;
};

/// One group of the fusion with the shim's answer and the commands it runs as.
struct GroupReport {
    Group group;
    Support support;
    std::vector<program::Opcode> commands;
};

/// The check of one model on one card.
struct Report {
    std::vector<GroupReport> groups;
    std::vector<Refusal> refusals; ///< in graph order, each (site, reason) once
    std::vector<Declined> declined;
    /// Whether the card runs the model: no refusals.
    bool runs() const { return refusals.empty(); }
    /// The listing `cardsim check` prints: per layer and part, each group's answer and commands,
    /// the merges not made and why, every refusal, then the verdict.
    std::string text(const graph::Graph& g) const;
    /// The listing alone: per layer and part, each group's answer and commands, the merges not
    /// made and why, every refusal.
    std::string listing(const graph::Graph& g) const;
    /// The verdict line: `verdict: the card runs this model (N commands a step: ...)` or `verdict:
    /// the card refuses this model (N refusals)`.
    std::string verdict() const;
};

/// `3 Gemm` / `Conv, Silu`: the op kinds of a group of `g`, a run of one kind counted.
std::string op_kinds(const graph::Graph& g, const Group& group);

/// The answer for one group of `g`: its class's, except that an attention over the cache with
/// variants needs only the variants it uses (a windowed model runs on a card with windows alone).
Support group_support(const graph::Graph& g, const Group& grp, const Capabilities& caps);

/// Checks `g` against a card with `caps`.
Report check_model(const graph::Graph& g, const Capabilities& caps);

} // namespace cardsim::shim
