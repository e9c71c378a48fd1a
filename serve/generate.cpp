#include "serve/generate.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <cmath>
#include <random>

namespace cardsim::serve {
namespace {

std::size_t whole(const std::string& s, const std::string& option) {
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(s, &used);
    } catch (...) {
        used = 0;
    }
    if (s.empty() || s.front() == '-' || used != s.size() || v == 0 || v > (1ull << 31))
        throw Error(fmt::format("{} `{}`: expected a token count from 1 to 2^31, or LOW:HIGH", option, s));
    return std::size_t(v);
}

} // namespace

Lengths parse_lengths(const std::string& text, const std::string& option) {
    auto colon = text.find(':');
    if (colon == std::string::npos) {
        auto n = whole(text, option);
        return {n, n};
    }
    Lengths l{whole(text.substr(0, colon), option), whole(text.substr(colon + 1), option)};
    if (l.low > l.high) throw Error(fmt::format("{} `{}`: LOW is above HIGH", option, text));
    return l;
}

std::vector<Request> poisson(const PoissonSpec& spec) {
    if (!(spec.rate > 0) || !std::isfinite(spec.rate))
        throw Error(fmt::format("--rate {}: expected a positive number of requests a second", spec.rate));
    if (spec.count == 0) throw Error("--count 0: expected at least one request");
    if (spec.count > max_generated)
        throw Error(fmt::format("--count {}: expected at most {} requests", spec.count, max_generated));
    std::mt19937_64 bits(spec.seed);
    auto uniform = [&] { return double(bits() >> 11) * 0x1.0p-53; }; // [0, 1)
    auto draw = [&](const Lengths& l) { return l.low + std::size_t(uniform() * double(l.high - l.low + 1)); };
    std::vector<Request> requests;
    double t = 0;
    for (std::size_t i = 0; i < spec.count; ++i) {
        t += -std::log1p(-uniform()) / spec.rate;
        Request r;
        r.arrival_seconds = t;
        r.prompt_tokens = draw(spec.prompt);
        r.output_tokens = draw(spec.output);
        requests.push_back(r);
    }
    return requests;
}

} // namespace cardsim::serve
