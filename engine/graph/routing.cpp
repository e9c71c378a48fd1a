#include "engine/graph/routing.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

namespace cardsim::graph {
namespace {

/// splitmix64: a well-mixed 64-bit value of `x`.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// A small deterministic generator (splitmix64 stream) of uniform u64 and doubles in [0, 1).
class Draws {
public:
    explicit Draws(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() { return mix(state_++ * 0x2545f4914f6cdd1dull + 0x1234567ull); }
    /// Uniform in [0, 1), 53 bits.
    double unit() { return double(next() >> 11) * 0x1.0p-53; }
    /// Uniform in [0, n).
    std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }

private:
    std::uint64_t state_;
};

/// A seed for step `s`, router `r`, row `q` of a model seeded `seed`.
std::uint64_t seed_of(std::uint64_t seed, std::size_t s, std::size_t r, std::size_t q) {
    return mix(mix(mix(seed ^ 0x726f75746572ull) + s) + r * 0x100000001b3ull + q);
}

std::size_t parse_count(std::string_view word, const std::string& where, std::string_view what) {
    std::size_t v = 0;
    auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || p != word.data() + word.size() || word.empty())
        throw Error(fmt::format("{}: `{}` is not a whole number (expected the {})", where, word, what));
    return v;
}

} // namespace

std::vector<RouterShape> routers(const Graph& g) {
    std::vector<RouterShape> out;
    for (const auto& op : g.ops)
        if (const auto* m = std::get_if<Moe>(&op)) out.push_back({m->routed(), m->top_k});
    return out;
}

std::string routing_text(const RoutingTrace& trace, std::span<const RouterShape> shapes) {
    std::string out = "cardsim-routing 1\n# step router row: chosen experts\n";
    for (std::size_t s = 0; s < trace.size(); ++s)
        for (std::size_t r = 0; r < trace[s].size(); ++r) {
            const std::size_t k = r < shapes.size() ? shapes[r].top_k : 1;
            const auto& v = trace[s][r];
            for (std::size_t q = 0; q * k < v.size(); ++q)
                out +=
                    fmt::format("{} {} {}: {}\n", s, r, q,
                                fmt::join(v.begin() + std::ptrdiff_t(q * k),
                                          v.begin() + std::ptrdiff_t(std::min(v.size(), (q + 1) * k)), " "));
        }
    return out;
}

RoutingTrace parse_routing(std::string_view text, std::string_view source) {
    RoutingTrace out;
    std::istringstream in{std::string(text)};
    std::string line;
    std::size_t n = 0;
    bool header = false;
    while (std::getline(in, line)) {
        ++n;
        const std::string where = fmt::format("{}:{}", source, n);
        if (!header) {
            if (line != "cardsim-routing 1")
                throw Error(fmt::format("{}: expected the header `cardsim-routing 1` (a routing trace `run "
                                        "--routing-out` writes)",
                                        where));
            header = true;
            continue;
        }
        if (line.empty() || line[0] == '#') continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            throw Error(fmt::format("{}: expected `STEP ROUTER ROW: EXPERTS...`", where));
        std::istringstream head(line.substr(0, colon)), rest(line.substr(colon + 1));
        std::string a, b, c, extra;
        if (!(head >> a >> b >> c) || (head >> extra))
            throw Error(fmt::format("{}: expected `STEP ROUTER ROW:` before the colon", where));
        const std::size_t s = parse_count(a, where, "step"), r = parse_count(b, where, "router");
        const std::size_t q = parse_count(c, where, "row");
        if (s != out.size() && s + 1 != out.size())
            throw Error(fmt::format("{}: step {} follows step {} (steps in order from 0)", where, s,
                                    out.empty() ? std::string("none") : std::to_string(out.size() - 1)));
        if (s == out.size()) out.emplace_back();
        auto& step = out.back();
        if (r != step.size() && r + 1 != step.size())
            throw Error(
                fmt::format("{}: router {} of step {} out of order (routers in order from 0)", where, r, s));
        if (r == step.size()) step.emplace_back();
        std::vector<std::uint32_t> row;
        std::string word;
        while (rest >> word) {
            const auto e = parse_count(word, where, "expert");
            if (e > 0xffffffffull) throw Error(fmt::format("{}: expert {} past 2^32", where, e));
            row.push_back(std::uint32_t(e));
        }
        if (row.empty()) throw Error(fmt::format("{}: row {} chooses no expert", where, q));
        auto& v = step.back();
        if (!v.empty() && v.size() % row.size() != 0)
            throw Error(fmt::format("{}: row {} chooses {} experts, the rows before it another number", where,
                                    q, row.size()));
        if (v.size() / row.size() != q)
            throw Error(fmt::format("{}: row {} out of order (rows in order from 0)", where, q));
        v.insert(v.end(), row.begin(), row.end());
    }
    if (!header) throw Error(fmt::format("{}: empty, expected the header `cardsim-routing 1`", source));
    return out;
}

RoutingTrace read_routing(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    if (!in || std::filesystem::is_directory(path, ec))
        throw Error(fmt::format("cannot read routing trace `{}`: no such readable file", path.string()));
    std::ostringstream text;
    text << in.rdbuf();
    return parse_routing(text.str(), path.string());
}

RoutingModel RoutingModel::parse(std::string_view spec, std::uint64_t seed) {
    RoutingModel m;
    m.spec_ = std::string(spec);
    m.seed_ = seed;
    if (spec == "uniform") {
        m.kind_ = Kind::Uniform;
    } else if (spec.starts_with("skew:")) {
        m.kind_ = Kind::Skew;
        const std::string s(spec.substr(5));
        char* end = nullptr;
        m.exponent_ = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(m.exponent_) || m.exponent_ < 0)
            throw Error(
                fmt::format("--routing {}: expected skew:S with S a number >= 0 (the Zipf exponent)", spec));
    } else if (spec.starts_with("trace:")) {
        m.kind_ = Kind::Trace;
        if (spec.size() == 6)
            throw Error("--routing trace: expected trace:FILE (a routing trace of run --routing-out)");
        m.trace_ = read_routing(std::filesystem::path(std::string(spec.substr(6))));
    } else {
        throw Error(fmt::format("--routing {}: expected uniform, skew:S or trace:FILE", spec));
    }
    return m;
}

StepRouting RoutingModel::step(std::size_t s, std::span<const RouterShape> shapes, std::size_t rows) const {
    if (kind_ == Kind::Trace) {
        const std::string file = spec_.substr(6);
        if (s >= trace_.size())
            throw Error(fmt::format("routing trace `{}`: the run needs step {}, the trace has {} steps", file,
                                    s, trace_.size()));
        const auto& step = trace_[s];
        if (step.size() != shapes.size())
            throw Error(fmt::format("routing trace `{}`: step {} routes {} routers, the model has {}", file,
                                    s, step.size(), shapes.size()));
        for (std::size_t r = 0; r < shapes.size(); ++r) {
            if (step[r].size() != rows * shapes[r].top_k)
                throw Error(
                    fmt::format("routing trace `{}`: step {} router {} chooses {} experts, the run needs {} "
                                "rows of {}",
                                file, s, r, step[r].size(), rows, shapes[r].top_k));
            for (auto e : step[r])
                if (e >= shapes[r].experts)
                    throw Error(fmt::format("routing trace `{}`: step {} router {} chooses expert {} of {}",
                                            file, s, r, e, shapes[r].experts));
        }
        return step;
    }
    StepRouting out;
    for (std::size_t r = 0; r < shapes.size(); ++r) {
        const std::size_t E = shapes[r].experts, k = std::min(shapes[r].top_k, shapes[r].experts);
        std::vector<std::uint32_t> v;
        v.reserve(rows * k);
        // Skew: expert popularity by a seeded order of the router's experts, p ∝ 1/(rank + 1)^S.
        std::vector<double> weight;
        if (kind_ == Kind::Skew) {
            std::vector<std::uint32_t> order(E);
            std::iota(order.begin(), order.end(), 0u);
            Draws d(seed_of(seed_, ~std::size_t{0}, r, 0));
            for (std::size_t i = E; i > 1; --i)
                std::swap(order[i - 1], order[d.below(i)]);
            weight.resize(E);
            for (std::size_t rank = 0; rank < E; ++rank)
                weight[order[rank]] = std::max(std::pow(double(rank + 1), -exponent_), 1e-300);
        }
        for (std::size_t q = 0; q < rows; ++q) {
            Draws d(seed_of(seed_, s, r, q));
            if (kind_ == Kind::Uniform) { // k distinct of E: a partial Fisher-Yates over a lazy permutation
                std::vector<std::pair<std::uint32_t, std::uint32_t>> swapped;
                auto at = [&](std::uint32_t i) {
                    for (auto& [a, b] : swapped)
                        if (a == i) return b;
                    return i;
                };
                auto set = [&](std::uint32_t i, std::uint32_t value) {
                    for (auto& [a, b] : swapped)
                        if (a == i) {
                            b = value;
                            return;
                        }
                    swapped.emplace_back(i, value);
                };
                for (std::size_t j = 0; j < k; ++j) {
                    const auto pick = std::uint32_t(j + d.below(E - j));
                    const auto chosen = at(pick);
                    set(pick, at(std::uint32_t(j)));
                    set(std::uint32_t(j), chosen);
                    v.push_back(chosen);
                }
            } else { // k distinct by weight, without replacement
                std::vector<double> w = weight;
                double total = std::accumulate(w.begin(), w.end(), 0.0);
                for (std::size_t j = 0; j < k; ++j) {
                    double u = d.unit() * total;
                    std::size_t e = 0;
                    for (; e + 1 < E; ++e) {
                        if (w[e] > 0 && u < w[e]) break;
                        u -= w[e];
                    }
                    while (w[e] == 0) // rounding ran past the last positive weight
                        e = (e + E - 1) % E;
                    v.push_back(std::uint32_t(e));
                    total -= w[e];
                    w[e] = 0;
                    if (total <= 0) total = std::accumulate(w.begin(), w.end(), 0.0);
                }
            }
        }
        out.push_back(std::move(v));
    }
    return out;
}

std::size_t distinct_experts(std::span<const std::uint32_t> routing) {
    return std::set<std::uint32_t>(routing.begin(), routing.end()).size();
}

} // namespace cardsim::graph
