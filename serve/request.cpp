#include "serve/request.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace cardsim::serve {
namespace {

/// The most tokens one request may hold in a prompt or ask for (positions are u32 on the card).
constexpr std::size_t most_tokens = std::size_t{1} << 31;

/// The comma-separated fields of `line`, trimmed of spaces and of one pair of double quotes.
std::vector<std::string> fields_of(const std::string& line) {
    std::vector<std::string> f;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, ',')) {
        auto b = field.find_first_not_of(" \t\r"), e = field.find_last_not_of(" \t\r");
        field = b == std::string::npos ? "" : field.substr(b, e - b + 1);
        if (field.size() >= 2 && field.front() == '"' && field.back() == '"')
            field = field.substr(1, field.size() - 2);
        f.push_back(field);
    }
    if (!line.empty() && line.back() == ',') f.emplace_back();
    return f;
}

/// Where a value of a trace is, for errors: `FILE:LINE: column NAME`.
struct At {
    const std::filesystem::path& path;
    std::size_t line;
    std::string_view column;
    std::string text() const { return fmt::format("{}:{}: column {}", path.string(), line, column); }
};

double number(const std::string& s, const At& at) {
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (...) {
        used = 0;
    }
    if (s.empty() || used != s.size() || !std::isfinite(v))
        throw Error(fmt::format("{}: `{}` is not a number", at.text(), s));
    return v;
}

/// A token count: a whole number in [1, 2^31] (Vidur's pandas may write 128.0).
std::size_t count(const std::string& s, const At& at) {
    double v = number(s, at);
    if (v != std::floor(v) || v < 1 || v > double(most_tokens))
        throw Error(
            fmt::format("{}: `{}` is not a token count (a whole number from 1 to 2^31)", at.text(), s));
    return std::size_t(v);
}

std::vector<std::uint32_t> ids_of(const std::string& s, const At& at) {
    std::vector<std::uint32_t> ids;
    std::istringstream in(s);
    for (std::string w; in >> w;) {
        std::size_t used = 0;
        unsigned long long v = 0;
        try {
            v = std::stoull(w, &used);
        } catch (...) {
            used = 0;
        }
        if (used != w.size() || v > 0xffffffffull)
            throw Error(
                fmt::format("{}: `{}` is not a token id (ids are u32, separated by spaces)", at.text(), w));
        ids.push_back(std::uint32_t(v));
    }
    return ids;
}

} // namespace

std::vector<Request> read_requests(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw Error(fmt::format("{}: no such file (expected a request trace, a CSV file)", path.string()));
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error(fmt::format("{}: not a request trace file (expected a CSV file)", path.string()));
    std::ifstream in(path);
    if (!in) throw Error(fmt::format("{}: cannot read the request trace", path.string()));
    std::string line;
    if (!std::getline(in, line))
        throw Error(fmt::format("{}:1: the request trace is empty (expected a header line)", path.string()));
    std::map<std::string, std::size_t> column;
    auto header = fields_of(line);
    for (std::size_t i = 0; i < header.size(); ++i)
        column.emplace(header[i], i);
    auto has = [&](const char* c) { return column.contains(c); };
    const bool vidur = !has("arrival_s") && has("arrived_at");
    const char* arrival = vidur ? "arrived_at" : "arrival_s";
    const char* prompt = vidur ? "num_prefill_tokens" : "prompt_tokens";
    const char* output = vidur ? "num_decode_tokens" : "output_tokens";
    for (const char* c : {arrival, prompt, output})
        if (!has(c))
            throw Error(fmt::format("{}:1: the header has no column {} (expected arrival_s,prompt_tokens,"
                                    "output_tokens[,prompt_ids], or Vidur's arrived_at,num_prefill_tokens,"
                                    "num_decode_tokens)",
                                    path.string(), c));
    std::optional<std::size_t> ids_column;
    if (has("prompt_ids")) ids_column = column["prompt_ids"];
    std::vector<Request> requests;
    for (std::size_t n = 2; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto f = fields_of(line);
        if (f.size() > header.size()) // a shifted or merged line, not a request to guess at
            throw Error(fmt::format("{}:{}: the line has {} fields, and the header names {} columns",
                                    path.string(), n, f.size(), header.size()));
        auto field = [&](const char* c) -> const std::string& {
            auto i = column[c];
            if (i >= f.size())
                throw Error(fmt::format("{}:{}: the line has {} fields, and column {} is field {}",
                                        path.string(), n, f.size(), c, i + 1));
            return f[i];
        };
        Request r;
        r.arrival_seconds = number(field(arrival), At{path, n, arrival});
        if (r.arrival_seconds < 0)
            throw Error(fmt::format("{}: a negative arrival time {}", At{path, n, arrival}.text(),
                                    r.arrival_seconds));
        if (!(r.arrival_seconds <= Request::latest_arrival_seconds))
            throw Error(fmt::format("{}: an arrival at {} s, past the {} s a serving run can reach (the "
                                    "simulated time is femtoseconds in 63 bits, 9223 s)",
                                    At{path, n, arrival}.text(), r.arrival_seconds,
                                    Request::latest_arrival_seconds));
        r.prompt_tokens = count(field(prompt), At{path, n, prompt});
        r.output_tokens = count(field(output), At{path, n, output});
        if (ids_column && !field("prompt_ids").empty()) {
            r.prompt_ids = ids_of(field("prompt_ids"), At{path, n, "prompt_ids"});
            if (r.prompt_ids.size() != r.prompt_tokens)
                throw Error(fmt::format("{}: {} ids for a prompt of {} tokens",
                                        At{path, n, "prompt_ids"}.text(), r.prompt_ids.size(),
                                        r.prompt_tokens));
        }
        requests.push_back(std::move(r));
    }
    std::stable_sort(requests.begin(), requests.end(), [](const Request& a, const Request& b) {
        return a.arrival_seconds < b.arrival_seconds;
    });
    return requests;
}

void write_requests(const std::filesystem::path& path, const std::vector<Request>& requests) {
    const bool ids =
        std::any_of(requests.begin(), requests.end(), [](auto& r) { return !r.prompt_ids.empty(); });
    std::string out = ids ? "arrival_s,prompt_tokens,output_tokens,prompt_ids\n"
                          : "arrival_s,prompt_tokens,output_tokens\n";
    for (auto& r : requests) {
        out += fmt::format("{:.9f},{},{}", r.arrival_seconds, r.prompt_tokens, r.output_tokens);
        if (ids) {
            out += ',';
            for (std::size_t i = 0; i < r.prompt_ids.size(); ++i)
                out += fmt::format("{}{}", i ? " " : "", r.prompt_ids[i]);
        }
        out += '\n';
    }
    io::write_file_atomically(path, out);
}

} // namespace cardsim::serve
