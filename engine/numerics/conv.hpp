#pragma once
// The conv unit: a causal depthwise convolution, with or without the SiLU after it, one token at a
// time, with the window of past inputs it keeps between tokens.
//
// For channel c with kernel w[c][0..K-1] (w[c][K-1] multiplies the newest input) and optional bias:
//   conv_c = window_sum(w[c][j] * in_j[c] for j < K, and bias_c);  out_c = silu(conv_c) or conv_c,
//   in_j = the input K-1-j tokens ago (in_{K-1} the current token; zeros before the first token),
// the products exact and the sum rounded once (exact_sum.hpp), then the correctly rounded SiLU
// (conv_silu_step) or nothing (conv_step).
// A NaN or infinity among a channel's terms makes that channel's output NaN. After the token the
// window drops its oldest input and keeps the current one.

#include <cstddef>
#include <span>
#include <vector>

namespace cardsim::numerics {

/// The past K-1 inputs of every channel, oldest first: window[j * channels + c].
struct ConvState {
    std::size_t channels = 0;
    std::size_t kernel = 0;
    std::vector<float> window;
    /// A zero window (the state before the first token).
    ConvState(std::size_t channels, std::size_t kernel);
};

/// One token: `x` (channels values) through the convolution of `weights` (channels x kernel,
/// row-major) and `bias` (empty or channels values) and the SiLU, into `out`; updates `state`.
void conv_silu_step(std::span<const float> x, std::span<const float> weights, std::span<const float> bias,
                    ConvState& state, std::span<float> out);

/// The same token without the SiLU: `out` gets the rounded sums.
void conv_step(std::span<const float> x, std::span<const float> weights, std::span<const float> bias,
               ConvState& state, std::span<float> out);

} // namespace cardsim::numerics
