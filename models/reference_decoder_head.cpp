// The decoder reference's embedding and logits (reference_decoder_parts.hpp).

#include "models/reference_decoder_parts.hpp"

#include "engine/error.hpp"
#include "engine/kernels/parallel.hpp"

#include <fmt/format.h>

#include <cmath>

namespace cardsim::models::reference::decoder {

void load_head(const Checkpoint& c, const std::string& prefix, bool tied, Weights& W) {
    W.embed = matrix(c, prefix + "embed_tokens.weight");
    W.final_norm = tensor(c, prefix + "norm.weight");
    if (!tied) W.lm_head = linear(c, "lm_head");
}

Vec embed(const Weights& W, std::int64_t token) {
    if (token < 0 || static_cast<std::size_t>(token) >= W.vocab)
        throw Error(fmt::format("token {} is outside the vocabulary of {}", token, W.vocab));
    Vec x = W.embed.row(static_cast<std::size_t>(token));
    for (auto& e : x)
        e *= W.embed_scale; // Gemma2Model's normalizer (1 elsewhere)
    return x;
}

Rows logits(const Weights& W, const Rows& xs) {
    Rows f;
    for (const auto& x : xs)
        f.push_back(rms_norm(x, W.final_norm, W.eps, W.zero_centred));
    Rows logits = W.lm_head.empty() ? W.embed(f) : W.lm_head(f); // tied: the embedding table is the head
    if (W.final_softcap)
        for (auto& row : logits)
            for (auto& z : row)
                z = *W.final_softcap * std::tanh(z / *W.final_softcap);
    return logits;
}

} // namespace cardsim::models::reference::decoder
