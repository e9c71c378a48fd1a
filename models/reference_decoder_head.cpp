// The decoder reference's embedding and logits (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include "engine/error.hpp"
#include "engine/kernels/parallel.hpp"

#include <fmt/format.h>

#include <cmath>

namespace cardsim::models::reference::decoder {

void load_head(const Checkpoint& c, const std::string& prefix, bool tied, Weights& W) {
    W.embed = tensor(c, prefix + "embed_tokens.weight");
    W.final_norm = tensor(c, prefix + "norm.weight");
    if (!tied) W.lm_head = linear(c, "lm_head");
}

Vec embed(const Weights& W, std::int64_t token) {
    if (token < 0 || static_cast<std::size_t>(token) >= W.vocab)
        throw Error(fmt::format("token {} is outside the vocabulary of {}", token, W.vocab));
    Vec x(W.embed.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(token) * W.hidden),
          W.embed.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(token) + 1) * W.hidden));
    for (auto& e : x)
        e *= W.embed_scale; // Gemma2Model's normalizer (1 elsewhere)
    return x;
}

Vec logits(const Weights& W, const Vec& x) {
    const Vec f = rms_norm(x, W.final_norm, W.eps, W.zero_centred);
    Vec logits;
    if (!W.lm_head.empty()) {
        logits = W.lm_head(f);
    } else {
        logits.assign(W.vocab, 0.0);
        kernels::parallel_for(W.vocab, 64,
                              [&](std::size_t begin, std::size_t end) { // rows alone: any threads
                                  for (std::size_t t = begin; t < end; ++t)
                                      for (std::size_t c = 0; c < W.hidden; ++c)
                                          logits[t] += W.embed[t * W.hidden + c] * f[c];
                              });
    }
    if (W.final_softcap)
        for (auto& z : logits)
            z = *W.final_softcap * std::tanh(z / *W.final_softcap);
    return logits;
}

} // namespace cardsim::models::reference::decoder
