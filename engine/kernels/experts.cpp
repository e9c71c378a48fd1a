#include "engine/kernels/experts.hpp"

#include "engine/error.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/numerics/combine.hpp"

#include <fmt/core.h>

#include <map>
#include <vector>

namespace cardsim::kernels {

void route(std::span<const float> logits, std::size_t experts, numerics::RouterNorm norm,
           std::span<std::uint32_t> chosen, std::span<float> weights) {
    if (experts == 0 || logits.size() % experts != 0)
        throw Error(fmt::format("route: {} logits are not rows of {} experts", logits.size(), experts));
    const std::size_t rows = logits.size() / experts;
    if (rows == 0 || chosen.size() % rows != 0 || weights.size() != chosen.size())
        throw Error(fmt::format("route: {} rows into {} chosen experts and {} weights", rows, chosen.size(),
                                weights.size()));
    const std::size_t k = chosen.size() / rows;
    for (std::size_t r = 0; r < rows; ++r)
        numerics::route(logits.subspan(r * experts, experts), norm, chosen.subspan(r * k, k),
                        weights.subspan(r * k, k));
}

void expert_matvec(const std::function<numerics::MatrixView(std::uint32_t)>& matrix_of,
                   std::span<const float> x, std::span<const std::uint32_t> chosen, std::size_t top_k,
                   bool per_slot, const numerics::Scheme& scheme, std::span<float> out, ExpertRange mine,
                   std::span<const float> biases) {
    if (top_k == 0 || chosen.size() % top_k != 0)
        throw Error(fmt::format("expert matvec: {} chosen experts are not rows of {}", chosen.size(), top_k));
    const std::size_t slots = chosen.size();
    if (slots == 0) return;
    // The slots of each expert, in slot order; experts in index order.
    std::map<std::uint32_t, std::vector<std::size_t>> by_expert;
    for (std::size_t s = 0; s < slots; ++s)
        if (mine.holds(chosen[s])) by_expert[chosen[s]].push_back(s);
    const std::size_t input_rows = per_slot ? slots : slots / top_k;
    if (input_rows == 0 || x.size() % input_rows != 0)
        throw Error(fmt::format("expert matvec: {} inputs are not {} rows", x.size(), input_rows));
    const std::size_t k = x.size() / input_rows;
    if (out.size() % slots != 0)
        throw Error(fmt::format("expert matvec: {} outputs are not {} slots' rows", out.size(), slots));
    const std::size_t n = out.size() / slots;
    for (std::size_t s = 0; s < slots; ++s)
        if (!mine.holds(chosen[s])) std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(s * n), n, 0.0f);
    std::vector<float> in, y;
    for (const auto& [e, list] : by_expert) {
        const auto w = matrix_of(e);
        if (w.layout().rows != n || w.layout().cols != k)
            throw Error(fmt::format("expert matvec: expert {}'s matrix is {} × {}, the slots need {} × {}", e,
                                    w.layout().rows, w.layout().cols, n, k));
        in.resize(list.size() * k);
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::size_t row = per_slot ? list[i] : list[i] / top_k;
            std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(row * k), k,
                        in.begin() + static_cast<std::ptrdiff_t>(i * k));
        }
        y.assign(list.size() * n, 0.0f);
        std::span<const float> bias;
        if (!biases.empty()) {
            const std::size_t at = std::size_t(e - mine.first) * n;
            if (at + n > biases.size())
                throw Error(
                    fmt::format("expert matvec: expert {}'s bias lies past the {} biases", e, biases.size()));
            bias = biases.subspan(at, n);
        }
        matvec(w, in, scheme, graph::Epilogue::None, bias, y);
        for (std::size_t i = 0; i < list.size(); ++i)
            std::copy_n(y.begin() + static_cast<std::ptrdiff_t>(i * n), n,
                        out.begin() + static_cast<std::ptrdiff_t>(list[i] * n));
    }
}

namespace {

/// Calls `row(r, weights, outs, shared)` for each row of a combine, its sizes checked.
template <class Row>
void combine_rows(std::span<const float> weights, std::span<const float> outs, std::span<const float> shared,
                  std::span<const float> gate_logits, std::size_t top_k, std::size_t outputs, Row row) {
    if (top_k == 0 || weights.size() % top_k != 0)
        throw Error(fmt::format("combine: {} weights are not rows of {}", weights.size(), top_k));
    const std::size_t rows = weights.size() / top_k;
    if (rows == 0 || outputs % rows != 0 || outs.size() != top_k * outputs)
        throw Error(fmt::format("combine: {} rows of {} experts into {} outputs from {} expert outputs", rows,
                                top_k, outputs, outs.size()));
    const std::size_t width = outputs / rows;
    if (!shared.empty() && (shared.size() != outputs || gate_logits.size() != rows))
        throw Error(fmt::format("combine: a shared expert of {} outputs and {} gate logits for {} rows of {}",
                                shared.size(), gate_logits.size(), rows, width));
    for (std::size_t r = 0; r < rows; ++r) {
        std::optional<numerics::SharedExpert> s;
        if (!shared.empty()) s = numerics::SharedExpert{gate_logits[r], shared.subspan(r * width, width)};
        row(r, width, weights.subspan(r * top_k, top_k), outs.subspan(r * top_k * width, top_k * width), s);
    }
}

} // namespace

void combine(std::span<const float> weights, std::span<const float> outs, std::span<const float> shared,
             std::span<const float> gate_logits, std::size_t top_k, std::span<float> out) {
    combine_rows(weights, outs, shared, gate_logits, top_k, out.size(),
                 [&](std::size_t r, std::size_t width, auto w, auto o, const auto& s) {
                     numerics::combine(w, o, s, out.subspan(r * width, width));
                 });
}

void combine_partial(std::span<const float> weights, std::span<const float> outs,
                     std::span<const float> shared, std::span<const float> gate_logits, std::size_t top_k,
                     std::span<std::byte> out) {
    const std::size_t b = numerics::PARTIAL_BYTES;
    if (out.size() % b != 0)
        throw Error(fmt::format("combine: {} bytes of parts are not parts of {} bytes", out.size(), b));
    std::vector<numerics::PartialSum> parts;
    combine_rows(weights, outs, shared, gate_logits, top_k, out.size() / b,
                 [&](std::size_t r, std::size_t width, auto w, auto o, const auto& s) {
                     parts.resize(width);
                     numerics::combine_partial(w, o, s, parts);
                     for (std::size_t c = 0; c < width; ++c)
                         numerics::encode(parts[c],
                                          out.subspan((r * width + c) * b).first<numerics::PARTIAL_BYTES>());
                 });
}

} // namespace cardsim::kernels
