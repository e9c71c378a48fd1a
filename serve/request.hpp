#pragma once
// A request trace: when each request arrives, how long its prompt is and how many tokens it wants.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace cardsim::serve {

/// One request of a trace: its arrival time (seconds from the trace's start), its prompt length,
/// the tokens it generates (the first one at the end of its prefill; at least one), and optionally
/// its prompt's ids (`prompt_tokens` of them).
struct Request {
    /// The latest arrival served: the simulated time is kept in femtoseconds in 63 bits (9,223 s),
    /// and a run must finish inside it, so arrivals stop 223 s short of that.
    static constexpr double latest_arrival_seconds = 9000;
    double arrival_seconds = 0;
    std::size_t prompt_tokens = 0;
    std::size_t output_tokens = 0;
    std::vector<std::uint32_t> prompt_ids;
};

/// Reads a request trace CSV: a header naming its columns, then one request per line, in any order
/// of arrival (the result is sorted by arrival, stably). Two column sets are read:
/// cardsim's `arrival_s,prompt_tokens,output_tokens[,prompt_ids]` (ids separated by spaces), and
/// Vidur's `arrived_at,num_prefill_tokens,num_decode_tokens` (other Vidur columns are ignored).
/// Refuses (cardsim::Error naming the file, the line and the column) a missing column, a value that
/// is not a number, a negative or non-finite arrival, a prompt of 0 tokens, 0 output tokens, or ids
/// whose count differs from `prompt_tokens`.
std::vector<Request> read_requests(const std::filesystem::path& path);

/// Writes `requests` as cardsim's CSV columns (ids only when some request has them), to a temporary
/// file renamed into place.
void write_requests(const std::filesystem::path& path, const std::vector<Request>& requests);

} // namespace cardsim::serve
