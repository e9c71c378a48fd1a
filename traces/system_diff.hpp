#pragma once
// `cardsim trace diff` of two system traces (format version 3): card by card, and the links.

#include "traces/diff.hpp"

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace cardsim::traces {

/// One link of the two systems: its messages, bytes and wire-busy cycles on each side.
struct LinkChange {
    std::uint32_t from = 0, to = 0;
    std::uint64_t messages_a = 0, messages_b = 0, bytes_a = 0, bytes_b = 0, busy_a = 0, busy_b = 0;
    bool in_a = false, in_b = false; ///< which side's header lists it
    /// Whether it differs: listed by one side only, other messages or bytes, or busy cycles beyond
    /// the tolerance (the rule of `deviates`).
    bool differs(double cycles_tol_pct) const;
};

/// Two system traces compared: each card's part (`card_trace`) by `diff`, and every link by its
/// totals. They agree when every card's report agrees and no link differs.
struct SystemDiffReport {
    std::vector<DiffReport> cards; ///< card k's report, card 0 first
    std::vector<LinkChange> links; ///< every link of either side, in (from, to) order
    double cycles_tol_pct = 0;
    bool agree() const;
    /// `traces agree: 2 cards, ...` or `traces differ: card 1: ...; link 0 -> 1: ...`.
    std::string verdict() const;
};

/// True when either trace is of a system of cards (a header with `card` lines).
bool is_system(const Trace& a, const Trace& b);

/// Compares the system trace B with the reference A card by card: card k of A against card k of B
/// with `options` (its `sites` only on a card that ran their program), and each link's messages,
/// bytes and busy cycles. Throws cardsim::Error, saying so, when the two are not systems of the
/// same number of cards (a trace of one card against a system's is not compared: their commands
/// are different programs; `trace show` gives each one's totals).
SystemDiffReport diff_system(const Trace& a, const Trace& b, const DiffOptions& options);

/// The report as `cardsim trace diff` prints it: the verdict, the links, then each card's report
/// (to_text of DiffReport) under `card K:`.
std::string to_text(const SystemDiffReport& report, std::string_view name_a, std::string_view name_b);

/// JSON (FORMAT.md 7.3): `{"format": "cardsim-trace-diff-system", "version": 1, "agree", "verdict",
/// "links": [...], "cards": [each card's 7.1 object]}`, one line with a final line feed.
std::string to_json(const SystemDiffReport& report, std::string_view name_a, std::string_view name_b);

/// CSV (FORMAT.md 7.3): the 7.2 columns after a leading `card` column; each card's rows, then a
/// `link` row per link and value (item `FROM->TO`, fields `messages`, `bytes`, `busy_cycles`).
std::string to_csv(const SystemDiffReport& report, std::string_view name_a, std::string_view name_b);

} // namespace cardsim::traces
