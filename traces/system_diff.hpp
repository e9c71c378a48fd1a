#pragma once
// `cardsim trace diff` of two system traces (format version 3): card by card, and the links.

#include "traces/diff.hpp"

#include <boost/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::traces {

/// The first message of a link that differs between the two systems: the k-th message of the link
/// on each side (its place among the link's messages, in the trace's order), or the k-th of one side
/// when the other carried fewer.
struct MessageChange {
    std::uint64_t index = 0;    ///< its place among its link's messages, counted from 0
    std::optional<Message> a{}; ///< A's k-th message of the link; none when A carried fewer
    std::optional<Message> b{}; ///< B's; none when B carried fewer
    /// Which values differ: START and END beyond the tolerance (the rule of `deviates`), BYTES at
    /// all; each is set when one side lacks the message.
    bool start_over = false, end_over = false, bytes_over = false;
};

/// One link of the two systems: its ports, its messages one by one, and its totals (messages,
/// bytes, wire-busy cycles) on each side.
struct LinkChange {
    std::uint32_t from = 0, to = 0;
    std::uint32_t ports_a = 0, ports_b = 0; ///< the `link` line's PORTS; 0 on a side that does not list it
    std::uint64_t messages_a = 0, messages_b = 0, bytes_a = 0, bytes_b = 0, busy_a = 0, busy_b = 0;
    bool in_a = false, in_b = false; ///< which side's header lists it
    /// The messages that differ, paired by place (the k-th of A against the k-th of B): START or
    /// END beyond the diff's tolerance, other BYTES, or a message of one side only. Compared at
    /// the tolerance `diff_system` was given.
    std::uint64_t messages_differing = 0;
    std::optional<MessageChange> first_message{}; ///< the lowest place that differs
    /// Whether it differs: listed by one side only, other ports, other messages or bytes, busy
    /// cycles beyond the tolerance (the rule of `deviates`), or a message that differs.
    bool differs(double cycles_tol_pct) const;
    /// What differs, for the verdict (`ports 2 -> 4, 3 of 45 messages from message 7`); empty when
    /// nothing does.
    std::string what(double cycles_tol_pct) const;
};

/// Two system traces compared: each card's part (`card_trace`) by `diff`, and every link by its
/// ports, its messages one by one and its totals. They agree when every card's report agrees and
/// no link differs.
struct SystemDiffReport {
    std::vector<DiffReport> cards; ///< card k's report, card 0 first
    std::vector<LinkChange> links; ///< every link of either side, in (from, to) order
    double cycles_tol_pct = 0;
    bool agree() const;
    /// `traces agree: 2 cards, ...` or `traces differ: card 1: ...; link 0 -> 1 differs (...)`.
    std::string verdict() const;
};

/// True when either trace is of a system of cards (a header with `card` lines).
bool is_system(const Trace& a, const Trace& b);

/// Compares the system trace B with the reference A card by card: card k of A against card k of B
/// with `options` (its `sites` only on a card that ran their program), and each link's ports, its
/// messages one by one (the k-th of A against the k-th of B: START and END within
/// `options.cycles_tol_pct` by the rule of `deviates`, BYTES exactly), and its totals of messages,
/// bytes and busy cycles. Throws cardsim::Error, saying so, when the two are not systems of the
/// same number of cards (a trace of one card against a system's is not compared: their commands
/// are different programs; `trace show` gives each one's totals).
SystemDiffReport diff_system(const Trace& a, const Trace& b, const DiffOptions& options);

/// The report as `cardsim trace diff` prints it: the verdict, the links (a table of ports and
/// totals, then a line per link whose messages differ: how many, and the first on both sides), then
/// each card's report (to_text of DiffReport) under `card K:`.
std::string to_text(const SystemDiffReport& report, std::string_view name_a, std::string_view name_b);

/// JSON (FORMAT.md 7.3): `{"format": "cardsim-trace-diff-system", "version": 1, "agree", "verdict",
/// "links": [...], "cards": [each card's 7.1 object]}`, one line with a final line feed; a link
/// carries its ports on each side, how many messages differ and the first that does.
std::string to_json(const SystemDiffReport& report, std::string_view name_a, std::string_view name_b);

/// CSV (FORMAT.md 7.3): the 7.2 columns after a leading `card` column; each card's rows, then a
/// `link` row per link and value (item `FROM->TO`, fields `ports`, `messages`, `bytes`,
/// `busy_cycles`, and for a link whose messages differ `message[K].start`, `.end`, `.bytes`).
std::string to_csv(const SystemDiffReport& report, std::string_view name_a, std::string_view name_b);

} // namespace cardsim::traces
