#include "serve/scheduler.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::serve {

Order parse_order(const std::string& text) {
    if (text == "decode-first") return Order::DecodeFirst;
    if (text == "prefill-first") return Order::PrefillFirst;
    throw Error(fmt::format("--policy `{}`: expected decode-first or prefill-first", text));
}

std::string_view name(Order o) {
    return o == Order::DecodeFirst ? "decode-first" : "prefill-first";
}

std::string BatchLimit::text() const {
    if (waited)
        return fmt::format("{} sequences at once, limited by the {} ({} sequences; arrived requests waited "
                           "for a slot at {} steps)",
                           largest, cap_reason, cap, waited);
    return fmt::format("{} sequences at once, limited by the arrival rate (the {} allows {})", largest,
                       cap_reason, cap);
}

Scheduler::Scheduler(std::vector<Request> requests, Policy policy, Capacity capacity, std::size_t lanes)
    : requests_(std::move(requests)), policy_(policy), capacity_(std::move(capacity)),
      running_(std::max<std::size_t>(1, lanes)) {
    if (capacity_.buckets.empty() || !std::is_sorted(capacity_.buckets.begin(), capacity_.buckets.end()) ||
        capacity_.buckets.front() == 0)
        throw Error("serve: the card's buckets must be a non-empty ascending list of positive row counts");
    if (capacity_.slots == 0)
        throw Error("serve: the card's DDR holds no sequence's caches and states beside the weights (lower "
                    "--max-positions, or give the card more DDR: ddr.channels, ddr.channel_bytes)");
    if (policy_.token_budget == 0) throw Error("--token-budget 0: a step must hold at least one token row");
    const std::size_t largest_bucket = capacity_.buckets.back();
    if (policy_.token_budget > largest_bucket)
        throw Error(fmt::format("--token-budget {}: the largest bucket holds {} token rows",
                                policy_.token_budget, largest_bucket));
    std::stable_sort(requests_.begin(), requests_.end(), [](const Request& a, const Request& b) {
        return a.arrival_seconds < b.arrival_seconds;
    });
    // The cap on sequences at once: the least of the slots, --max-seqs and the token budget.
    limit_.cap = capacity_.slots;
    limit_.cap_reason = capacity_.slots_limit;
    if (policy_.max_seqs && policy_.max_seqs < limit_.cap) {
        limit_.cap = policy_.max_seqs;
        limit_.cap_reason = "--max-seqs";
    }
    if (policy_.token_budget * running_.size() < limit_.cap) {
        limit_.cap = policy_.token_budget * running_.size();
        limit_.cap_reason = running_.size() > 1 ? fmt::format("token budget ({} a lane, {} lanes)",
                                                              policy_.token_budget, running_.size())
                                                : std::string("token budget");
    }
    for (std::uint32_t s = std::uint32_t(limit_.cap); s-- > 0;)
        free_slots_.push_back(s); // slot 0 is taken first
    for (std::size_t r = 0; r < requests_.size(); ++r) {
        auto& q = requests_[r];
        RequestTimes t;
        t.arrival = q.arrival_seconds;
        t.prompt_tokens = q.prompt_tokens;
        t.output_tokens = q.output_tokens;
        if (q.prompt_tokens + q.output_tokens - 1 > capacity_.max_positions)
            t.refused = fmt::format("a prompt of {} and {} output tokens need {} positions, a slot holds {}",
                                    q.prompt_tokens, q.output_tokens, q.prompt_tokens + q.output_tokens - 1,
                                    capacity_.max_positions);
        if (!q.prompt_ids.empty() && capacity_.vocab)
            for (auto id : q.prompt_ids)
                if (id >= capacity_.vocab)
                    throw Error(fmt::format("request {}: prompt id {} is past the vocabulary of {}", r, id,
                                            capacity_.vocab));
        times_.push_back(std::move(t));
    }
}

std::uint32_t Scheduler::prompt_id(std::size_t r, std::size_t position) const {
    auto& ids = requests_[r].prompt_ids;
    if (!ids.empty()) return ids[position];
    return std::uint32_t((7 + 31 * std::uint64_t(position) + 101 * std::uint64_t(r)) % capacity_.vocab);
}

void Scheduler::admit(double now, std::size_t lane) {
    auto in_lane =
        std::size_t(std::count_if(live_.begin(), live_.end(), [&](const Live& l) { return l.lane == lane; }));
    while (next_arrival_ < requests_.size() && requests_[next_arrival_].arrival_seconds <= now) {
        auto& t = times_[next_arrival_];
        if (!t.refused.empty()) {
            ++next_arrival_;
            continue;
        }
        if (free_slots_.empty() || in_lane >= policy_.token_budget) {
            ++limit_.waited;
            return;
        }
        t.slot = free_slots_.back();
        free_slots_.pop_back();
        live_.push_back(Live{next_arrival_, t.slot, 0, lane});
        ++in_lane;
        ++next_arrival_;
    }
}

std::optional<Step> Scheduler::next(double now) {
    if (running_.size() != 1) throw Error("serve: a scheduler of lanes is asked for a lane's step (next_in)");
    if (running_[0]) throw Error("serve: the scheduler was asked for a step before the last one was done");
    admit(now, 0);
    double not_before = now;
    if (live_.empty()) {
        // Nothing to run: wait for the next request that runs.
        auto until = idle_until();
        if (!until) return std::nullopt;
        not_before = std::max(now, *until);
        admit(not_before, 0);
    }
    return build(0, not_before);
}

std::optional<Step> Scheduler::next_in(double now, std::size_t lane) {
    if (lane >= running_.size())
        throw Error(fmt::format("serve: lane {} of a scheduler of {}", lane, running_.size()));
    if (running_[lane])
        throw Error(fmt::format("serve: lane {} was asked for a step before its last one was done", lane));
    admit(now, lane);
    if (std::none_of(live_.begin(), live_.end(), [&](const Live& l) { return l.lane == lane; }))
        return std::nullopt;
    return build(lane, now);
}

std::optional<double> Scheduler::idle_until() const {
    std::size_t r = next_arrival_;
    while (r < requests_.size() && !times_[r].refused.empty())
        ++r;
    if (r == requests_.size()) return std::nullopt;
    return requests_[r].arrival_seconds;
}

Step Scheduler::build(std::size_t lane, double not_before) {
    Step step;
    step.not_before_seconds = not_before;
    const std::size_t budget = policy_.token_budget;
    auto decode_rows = [&] {
        for (auto& l : live_) {
            auto& q = requests_[l.request];
            if (l.lane != lane || l.prefilled < q.prompt_tokens || step.rows.size() >= budget) continue;
            auto& t = times_[l.request];
            // Decode: feed the last token got, at the position after it.
            step.rows.push_back(Row{l.request, l.slot,
                                    std::uint32_t(q.prompt_tokens + t.generated.size() - 1),
                                    t.generated.back(), true});
        }
    };
    auto prefill_rows = [&] {
        for (auto& l : live_) {
            auto& q = requests_[l.request];
            if (l.lane != lane || l.prefilled >= q.prompt_tokens) continue;
            std::size_t room = budget - std::min(budget, step.rows.size());
            std::size_t n = std::min(q.prompt_tokens - l.prefilled, room);
            if (policy_.chunk) n = std::min(n, policy_.chunk);
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t p = l.prefilled + i;
                step.rows.push_back(Row{l.request, l.slot, std::uint32_t(p), prompt_id(l.request, p),
                                        p + 1 == q.prompt_tokens});
            }
        }
    };
    if (policy_.order == Order::DecodeFirst) {
        decode_rows();
        prefill_rows();
    } else {
        prefill_rows();
        decode_rows();
    }
    for (auto& l : live_) {
        auto& t = times_[l.request];
        if (l.prefilled == 0 && std::any_of(step.rows.begin(), step.rows.end(),
                                            [&](const Row& r) { return r.request == l.request; }))
            t.admitted = step.not_before_seconds;
    }
    limit_.largest = std::max(limit_.largest, live_.size());
    auto& b = capacity_.buckets;
    step.bucket = std::size_t(std::lower_bound(b.begin(), b.end(), step.rows.size()) - b.begin());
    running_[lane] = step;
    return step;
}

void Scheduler::done(double start, double end, std::span<const std::uint32_t> tokens) {
    (void)start;
    done_in(0, end, tokens);
}

void Scheduler::done_in(std::size_t lane, double end, std::span<const std::uint32_t> tokens) {
    if (lane >= running_.size() || !running_[lane])
        throw Error("serve: a step was reported done that the scheduler did not give");
    auto& rows = running_[lane]->rows;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto& row = rows[i];
        auto l =
            std::find_if(live_.begin(), live_.end(), [&](const Live& x) { return x.request == row.request; });
        auto& q = requests_[row.request];
        if (l->prefilled < q.prompt_tokens) l->prefilled = std::size_t(row.position) + 1;
        if (!row.emits) continue;
        auto& t = times_[row.request];
        t.generated.push_back(i < tokens.size() ? tokens[i] : 0);
        if (t.generated.size() == 1) t.first_token = end;
        if (t.generated.size() == q.output_tokens) {
            t.finished = end;
            t.done = true;
        }
    }
    // Retire finished sequences: their slots are free for the next step.
    for (auto it = live_.begin(); it != live_.end();) {
        if (times_[it->request].done) {
            free_slots_.push_back(it->slot);
            it = live_.erase(it);
        } else {
            ++it;
        }
    }
    running_[lane].reset();
}

} // namespace cardsim::serve
