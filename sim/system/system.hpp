#pragma once
// A system of cards in one SystemC simulation: N full cards (each its own DDR, SRAM, units and
// command processor, running its own program), joined by links between their network ports as
// the config's `[system]` topology says, and one host that drives them step by step.

#include "sim/card/simulation.hpp"
#include "sim/system/link.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace cardsim::sim::system {

/// The links of a topology: (from, to, parallel ports) for each direction of each joined pair.
/// Ring: each card to its two neighbours over half its ports each (two cards: to each other over
/// every port); pairs: 2j and 2j + 1 over every port (an odd last card has none); switch: every
/// card to node `cards` (the switch) over every port. A ring of more than two cards on fewer than
/// two ports or on an odd count (a port would be idle), or a `link.switch_latency_ns` other than
/// the default without a switch, is a cardsim::Error saying so.
std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> links_of(const card::CardConfig& config);

/// The nodes the links join: the cards, and a switch's node after them.
std::uint32_t nodes_of(const card::CardConfig& config);
/// A node as a summary names it: the card's index, or `switch`.
std::string node_name(std::uint32_t node, const card::CardConfig& config);

/// The first hop of the shortest route between each pair of cards over `links` (links_of):
/// `routes[from][to]`, or no value when no route joins them (and for `to == from`). Among routes
/// of equal length, the one through the lower-numbered neighbour.
using Routes = std::vector<std::vector<std::optional<std::uint32_t>>>;
Routes routes_of(const std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>& links,
                 std::uint32_t cards);

/// Why the system of `config` cannot carry what `programs` (card k's program, in card order)
/// send and receive: its links cannot be wired (links_of), or a send or receive names a card no
/// route reaches; nullopt when it can. A run refuses the same (`check` and `compile` ask it of a
/// plan's programs, so that they never grant what a run refuses).
std::optional<std::string> network_refusal(const card::CardConfig& config,
                                           std::span<const program::Program* const> programs);

/// What a system run produced: each card's run (its records, DDR channels and units), the links'
/// totals, and the system's cycles and seconds (every card's steps end together).
struct SystemResult {
    std::vector<RunResult> cards;
    std::vector<LinkTotals> links;
    std::vector<std::uint64_t> step_end; ///< the kernel cycle each step ended on every card
    /// Per step of a model with experts: each router's chosen experts (the graph's router numbers),
    /// gathered from the cards that routed them (sim::RunResult::routing).
    std::vector<std::vector<std::vector<std::uint32_t>>> routing;
    std::uint64_t cycles = 0;
    double seconds = 0;
    std::optional<std::string> fault; ///< the first card's fault, naming the card
    double host_seconds = 0;  ///< wall-clock time of the whole simulation (checks, elaboration, load, steps)
    double setup_seconds = 0; ///< of which checking the programs, elaborating and loading the DDR images
    double steps_seconds = 0; ///< of which running the steps (the simulation proper)
};

/// The system's run as one run: every card's records (each carrying its card), the last card's
/// outputs, the system's steps and cycles, every card's DDR channels in card order, each unit
/// instance's busy cycles (its module is named `cardK.unit_i`), the kinds' totals summed over the cards.
RunResult whole(const SystemResult& system);

/// Elaborates `config.system.cards` cards (the card of `config`, with a network unit) and their
/// links, loads program `k` of `programs` on card `k` (one a card, else cardsim::Error; so is a
/// send or receive between cards no route joins), and runs
/// `plan`'s steps: before each, the host writes the step's inputs into every card's io places;
/// every card runs its program; the step ends when all have; the outputs handed to the next
/// step's inputs are the last card's. One simulation per process, as sim::simulate.
SystemResult simulate(const card::CardConfig& config, std::span<const program::Loaded> programs,
                      const RunPlan& plan);

/// As above for an open-ended session (sim::simulate's over a set): card k holds the set `sets[k]`
/// (its buckets lowered together, the same count on every card; the first carries the DDR image),
/// and each step of `plan.next` runs its bucket on every card, the steps one after another.
SystemResult simulate(const card::CardConfig& config, std::span<const std::vector<program::Loaded>> sets,
                      const SessionPlan& plan);

} // namespace cardsim::sim::system
