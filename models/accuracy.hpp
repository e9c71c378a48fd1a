#pragma once
// The f64 accuracy metric: how far a run's logits are from the f64 reference of the model they
// were computed for (models/reference.hpp), as the numerics sweeps report it.

#include "models/model.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::models {

/// Accuracy of a run's logits against the f64 reference, teacher-forced on the run's tokens.
struct Accuracy {
    double max_abs_error = 0;  ///< over every logit of every step
    double top1_agreement = 0; ///< fraction of steps whose reference arg-max is the run's token
    double kl = 0;             ///< mean KL(reference ‖ run) of the softmaxes, nats
    std::size_t steps = 0;
};

/// The accuracy of `logits` (one f32 row per step) against the f64 reference of `model`. A decoder
/// feeds `tokens[s]` at step `s` and is measured over the generating steps (from step
/// `prefill_steps - 1` on), its top-1 against the token fed next (the last step's against its own);
/// the encoder runs `tokens` in one step and compares the marker logits at `markers`, its top-1
/// being whether both arg-maxes agree.
Accuracy accuracy(const Model& model, std::span<const std::vector<float>> logits,
                  const std::vector<std::uint32_t>& tokens, std::size_t prefill_steps,
                  const std::vector<std::size_t>& markers);

} // namespace cardsim::models
