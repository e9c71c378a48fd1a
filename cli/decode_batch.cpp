#include "cli/decode_batch.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>

namespace cardsim::cli {

std::uint32_t row_token(std::span<const std::byte> next, std::size_t r) {
    if (next.size() < 4 * (r + 1)) return 0;
    float f = 0;
    std::memcpy(&f, next.data() + 4 * r, 4);
    return std::uint32_t(f);
}

std::vector<std::size_t> encoder_markers(std::size_t n) {
    std::vector<std::size_t> m;
    for (std::size_t t = 0; t < n; t += 4)
        m.push_back(t);
    return m;
}

std::vector<std::uint32_t> default_prompt(std::size_t seq, std::size_t vocab) {
    std::vector<std::uint32_t> p;
    for (std::size_t t : {1u, 17u, 42u, 7u})
        p.push_back(std::uint32_t((t + 101 * seq) % std::max<std::size_t>(vocab, 1)));
    return p;
}

std::vector<std::vector<std::uint32_t>> batch_prompts(std::span<const std::vector<std::uint32_t>> given,
                                                      std::size_t seqs, std::size_t vocab) {
    if (given.size() > seqs)
        throw Error(fmt::format("--prompt: {} prompts for {} sequences (give at most one a sequence)",
                                given.size(), seqs));
    std::vector<std::vector<std::uint32_t>> p(given.begin(), given.end());
    for (std::size_t s = 0; s < p.size(); ++s)
        if (p[s].empty()) throw Error(fmt::format("--prompt: the prompt of sequence {} has no ids", s));
    while (p.size() < seqs)
        p.push_back(default_prompt(p.size(), vocab));
    return p;
}

DecodeBatch::DecodeBatch(std::vector<std::vector<std::uint32_t>> prompts, std::size_t tokens,
                         std::uint32_t first_position)
    : prompts_(std::move(prompts)), fed_(prompts_), first_position_(first_position) {
    for (auto& p : prompts_)
        steps_ = std::max(steps_, p.size() + std::max<std::size_t>(tokens, 1) - 1);
}

std::size_t DecodeBatch::prefill_steps() const {
    std::size_t n = 0;
    for (auto& p : prompts_)
        n = std::max(n, p.size());
    return n;
}

graph::BatchInputs DecodeBatch::inputs(std::size_t step, std::span<const std::byte> next) {
    auto in = inputs(step, next, 0, seqs());
    in.slots.clear();
    return in;
}

graph::BatchInputs DecodeBatch::inputs(std::size_t step, std::span<const std::byte> next, std::size_t first,
                                       std::size_t count) {
    graph::BatchInputs in;
    for (std::size_t r = 0; r < count; ++r) {
        auto& fed = fed_.at(first + r);
        if (step >= fed.size()) fed.push_back(row_token(next, r));
        in.ids.push_back(fed[step]);
        in.positions.push_back(first_position_ + std::uint32_t(step));
        in.slots.push_back(std::uint32_t(first + r));
    }
    return in;
}

void DecodeBatch::finish(std::span<const std::byte> next) {
    for (std::size_t r = 0; r < seqs(); ++r)
        fed_[r].push_back(row_token(next, r));
}

std::vector<std::uint32_t> DecodeBatch::generated(std::size_t seq) const {
    const auto& f = fed_[seq];
    return {f.begin() + std::ptrdiff_t(prompts_[seq].size()), f.end()};
}

} // namespace cardsim::cli
