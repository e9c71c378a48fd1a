#include "engine/numerics/conv.hpp"

#include "engine/error.hpp"
#include "engine/numerics/exact_sum.hpp"
#include "engine/numerics/functions.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace cardsim::numerics {

ConvState::ConvState(std::size_t c, std::size_t k)
    : channels(c), kernel(k), window(k == 0 ? 0 : (k - 1) * c, 0.0f) {
    if (k == 0) throw Error("conv: a kernel of 0 taps");
}

namespace {

/// One token of the convolution, SiLU after it when `silu_after`.
void step(std::span<const float> x, std::span<const float> weights, std::span<const float> bias, ConvState& s,
          bool silu_after, std::span<float> out) {
    const std::size_t C = s.channels, K = s.kernel;
    if (x.size() != C || out.size() != C || weights.size() != C * K || (!bias.empty() && bias.size() != C))
        throw Error("conv: " + std::to_string(C) + " channels of " + std::to_string(K) + " taps take " +
                    std::to_string(C) + " inputs, outputs and biases and " + std::to_string(C * K) +
                    " weights");
    std::vector<Term> terms(K + 1);
    for (std::size_t c = 0; c < C; ++c) {
        bool finite = bias.empty() || std::isfinite(bias[c]);
        std::size_t n = 0;
        for (std::size_t j = 0; j < K; ++j) {
            const float in = j + 1 < K ? s.window[j * C + c] : x[c];
            const float w = weights[c * K + j];
            finite = finite && std::isfinite(in) && std::isfinite(w);
            if (finite) terms[n++] = product(w, in);
        }
        if (!bias.empty() && finite) terms[n++] = term(bias[c]);
        if (!finite) {
            out[c] = std::numeric_limits<float>::quiet_NaN();
            continue;
        }
        const float sum = window_sum(std::span<const Term>(terms).first(n));
        out[c] = silu_after ? silu(sum) : sum;
    }
    if (K > 1) {
        for (std::size_t j = 0; j + 2 < K; ++j)
            for (std::size_t c = 0; c < C; ++c)
                s.window[j * C + c] = s.window[(j + 1) * C + c];
        for (std::size_t c = 0; c < C; ++c)
            s.window[(K - 2) * C + c] = x[c];
    }
}

} // namespace

void conv_silu_step(std::span<const float> x, std::span<const float> weights, std::span<const float> bias,
                    ConvState& s, std::span<float> out) {
    step(x, weights, bias, s, true, out);
}

void conv_step(std::span<const float> x, std::span<const float> weights, std::span<const float> bias,
               ConvState& s, std::span<float> out) {
    step(x, weights, bias, s, false, out);
}

} // namespace cardsim::numerics
