#pragma once
// The figures of a served trace: latency percentiles, throughput and how busy the card was.

#include "serve/scheduler.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace cardsim::serve {

/// The 50th, 90th and 99th percentiles of some values, by nearest rank: the p-th is the value at
/// rank ceil(p/100 × n) of the n values sorted (so p99 of fewer than 100 values is the largest).
struct Percentiles {
    double p50 = 0, p90 = 0, p99 = 0;
    std::size_t count = 0;
};
Percentiles percentiles(std::vector<double> values);

/// A served trace in numbers. Throughput counts every output token of the served requests over the
/// span from the first arrival to the last finish; utilisation is the fraction of that span in which
/// the card ran a step (the rest it waited for arrivals).
struct ServeSummary {
    std::size_t requests = 0, served = 0, refused = 0, output_tokens = 0, steps = 0;
    double span_seconds = 0, busy_seconds = 0, tokens_per_second = 0, utilisation = 0;
    std::size_t rows = 0, padded_rows = 0; ///< token rows run, and rows the buckets padded
    Percentiles ttft, tpot, e2e;
    BatchLimit limit;
    std::string first_refusal; ///< why the first refused request was refused
};

/// The summary of `scheduler`'s requests after a run of `steps` steps busy for `busy_seconds`, with
/// `rows` token rows of which `padded` were bucket padding.
ServeSummary summarise(const Scheduler& scheduler, std::size_t steps, double busy_seconds, std::size_t rows,
                       std::size_t padded);

/// The summary a person reads (times in ms).
std::string text(const ServeSummary& s);
/// One `key=value` a line for machines (sweeps parse it): serve_tokens_per_second, ttft_p99_ms, ...
std::string machine(const ServeSummary& s);
/// One line a request: its lengths, slot, times (seconds) and latencies, to a temporary file renamed
/// into place.
void write_request_table(const std::filesystem::path& path, const std::vector<RequestTimes>& times);

} // namespace cardsim::serve
