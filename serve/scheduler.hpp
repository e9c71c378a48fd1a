#pragma once
// Continuous batching: which token rows of which requests the card runs each step, in which store
// slots, and when each request got its tokens.

#include "serve/request.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::serve {

/// Which kind of work goes first into a step's token budget.
enum class Order { DecodeFirst, PrefillFirst };

/// Parses `decode-first` or `prefill-first`; else cardsim::Error naming `--policy`.
Order parse_order(const std::string& text);
std::string_view name(Order o);

/// The scheduling policy: a step holds at most `token_budget` token rows; `order` says whether every
/// decoding sequence's row goes in first (decode-first: chunked prefill as Sarathi-Serve does) or the
/// prefill chunks do; a prefilling request takes at most `chunk` prompt tokens a step (0: whatever the
/// budget leaves). At most `max_seqs` sequences are admitted at once (0: as many as the card's store
/// slots), and never more than the token budget, so every admitted sequence's decode row fits in
/// every step.
struct Policy {
    Order order = Order::DecodeFirst;
    std::size_t token_budget = 16;
    std::size_t chunk = 0;
    std::size_t max_seqs = 0;
};

/// The card the scheduler fills: its buckets (token rows a step can run, ascending: a step runs the
/// smallest that holds its rows), its store slots (sequences whose caches and states fit in its DDR
/// beside the weights), the positions a slot holds, and the vocabulary (for prompts made up).
struct Capacity {
    std::vector<std::size_t> buckets;
    std::size_t slots = 0;
    std::size_t max_positions = 0;
    std::size_t vocab = 1;
    std::string slots_limit = "DDR capacity"; ///< what sets the slot count, for the batch limit's sentence
};

/// One token row of a step: request `request`'s token `id` at `position`, in store slot `slot`;
/// `emits` when the row's arg-max is the request's next token (its prompt's last row, or a decode row).
struct Row {
    std::size_t request = 0;
    std::uint32_t slot = 0, position = 0, id = 0;
    bool emits = false;
};

/// A step to run: its rows (a prefill chunk's rows together and in order), the bucket that holds
/// them (an index into `Capacity::buckets`), and the time it may start (a step that waits for an
/// arrival starts at that arrival).
struct Step {
    std::vector<Row> rows;
    std::size_t bucket = 0;
    double not_before_seconds = 0;
};

/// What happened to one request: when it arrived, was admitted (its first step started), got its
/// first token and its last; its slot; or why it was refused (it never runs).
struct RequestTimes {
    double arrival = 0, admitted = 0, first_token = 0, finished = 0;
    std::uint32_t slot = 0;
    std::size_t prompt_tokens = 0, output_tokens = 0;
    std::vector<std::uint32_t> generated; ///< the tokens it got (a timing-only run's are all 0)
    std::string refused;                  ///< empty when it ran
    bool done = false;
    double ttft() const { return first_token - arrival; }
    /// Time per output token after the first (none for a one-token request).
    std::optional<double> tpot() const {
        if (output_tokens < 2) return std::nullopt;
        return (finished - first_token) / double(output_tokens - 1);
    }
    double e2e() const { return finished - arrival; }
};

/// What bounded the batch: the largest number of sequences a step held, the cap on it (store slots,
/// --max-seqs or the token budget, whichever is least) and whether an arrived request ever waited
/// for a slot (then the cap limited it; else the arrival rate did).
struct BatchLimit {
    std::size_t largest = 0, cap = 0;
    std::string cap_reason; ///< `DDR capacity`, `--max-seqs` or `token budget` (with lanes: `token budget (B
                            ///< a lane, L lanes)`)
    std::size_t waited = 0; ///< steps at which an arrived request waited for a slot
    std::string text() const;
};

/// The continuous-batching scheduler. At each step boundary it admits arrived requests in arrival
/// order into free slots, builds the step's rows by the policy, and after the step records the tokens
/// its emitting rows produced; a request whose last token came retires and frees its slot for the
/// next step. A request whose prompt and output need more positions than a slot holds is refused
/// (its `refused` says so) and never runs.
///
/// With `lanes` > 1 (a pipeline's microbatches) the live sequences are split into lanes whose steps
/// are in flight at once: a request joins the lane whose step is built when it has arrived, each
/// lane holds at most the token budget's sequences (so the cap is lanes × budget, slots and
/// --max-seqs permitting), and a lane's step holds its own sequences' rows only.
class Scheduler {
public:
    Scheduler(std::vector<Request> requests, Policy policy, Capacity capacity, std::size_t lanes = 1);

    /// The next step when the card is free at `now` (seconds), or none when every request is done
    /// (one lane).
    std::optional<Step> next(double now);
    /// The step `next` gave ran from `start` to `end`; `tokens[i]` is row i's arg-max (fewer or none,
    /// as in a timing-only run: 0).
    void done(double start, double end, std::span<const std::uint32_t> tokens);

    /// Lane `lane`'s next step at `now`, its arrived requests admitted first, or none when the lane
    /// has no live sequence (it idles; `idle_until` says when to ask again).
    std::optional<Step> next_in(double now, std::size_t lane);
    /// Lane `lane`'s step ended at `end` (as `done`).
    void done_in(std::size_t lane, double end, std::span<const std::uint32_t> tokens);
    /// When every lane idles and none runs: the next arrival that will run, or none when every
    /// request is done or refused.
    std::optional<double> idle_until() const;
    std::size_t lanes() const { return running_.size(); }

    const std::vector<RequestTimes>& times() const { return times_; }
    const BatchLimit& limit() const { return limit_; }
    const Policy& policy() const { return policy_; }
    const Capacity& capacity() const { return capacity_; }
    /// The prompt id of request `r` at `position` (its given ids, or made up: (7 + 31 p + 101 r) mod vocab).
    std::uint32_t prompt_id(std::size_t r, std::size_t position) const;

private:
    /// A request admitted to a slot (and a lane): how much of its prompt has run.
    struct Live {
        std::size_t request = 0;
        std::uint32_t slot = 0;
        std::size_t prefilled = 0;
        std::size_t lane = 0;
    };
    std::vector<Request> requests_;
    Policy policy_;
    Capacity capacity_;
    std::vector<RequestTimes> times_;
    std::size_t next_arrival_ = 0; ///< the first request not yet admitted or refused
    std::vector<Live> live_;       ///< in admission order
    std::vector<std::uint32_t> free_slots_;
    std::vector<std::optional<Step>> running_; ///< each lane's step in flight
    BatchLimit limit_;

    /// Admits the requests arrived by `now` into lane `lane` while it and the slots have room.
    void admit(double now, std::size_t lane);
    /// Lane `lane`'s step of its live sequences' rows by the policy, from `not_before` seconds.
    Step build(std::size_t lane, double not_before);
};

} // namespace cardsim::serve
