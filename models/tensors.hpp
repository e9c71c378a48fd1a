#pragma once
// The checkpoint tensors an architecture has: their real (transformers) names and shapes, and what
// kind of parameter each is (which the generator uses to give it realistic values).

#include "models/spec.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace cardsim::models {

/// What a tensor is, for giving it values of a realistic scale.
enum class Role {
    Embedding,       ///< token embedding (and a tied LM head)
    Linear,          ///< a projection `[out, in]`
    LinearInOut,     ///< a projection stored `[in, out]` (gpt-oss's experts, `[E, in, out]`)
    Norm,            ///< a norm's scale, around 1
    ZeroCentredNorm, ///< a zero-centred RMSNorm's weight, around 0 (applied as 1 + w)
    Bias,            ///< a bias, small
    Conv,            ///< a depthwise conv kernel
    ALog,            ///< Gated-DeltaNet log decay rate
    DtBias,          ///< Gated-DeltaNet time-step bias
    Table,           ///< a lookup table added to the stream (question types)
};

/// One tensor an architecture needs.
struct TensorSpec {
    std::string name;
    std::vector<std::size_t> shape;
    Role role = Role::Linear;
};

/// The names of a decoder's tensors (transformers module paths + `.weight`).
struct DecoderNames {
    const DecoderSpec& spec;
    /// `<prefix>layers.<i>.<rest>`.
    std::string layer(std::size_t i, std::string_view rest) const;
    std::string embed() const;
    std::string final_norm() const;
    /// The LM head: `lm_head.weight`, or the embedding when tied.
    std::string lm_head() const;
};

/// The names of the encoder's tensors (ModernBERT module paths, and the heads of models/README.md).
struct EncoderNames {
    const EncoderSpec& spec;
    std::string layer(std::size_t i, std::string_view rest) const;
    std::string embed() const;
    std::string embed_norm(std::string_view what = "weight") const;
    std::string final_norm(std::string_view what = "weight") const;
};

/// The encoder heads' tensor names.
inline constexpr std::string_view QUESTION_TYPE_TABLE = "heads.question_type.weight";
inline constexpr std::string_view MARKER_WEIGHT = "heads.marker.weight";
inline constexpr std::string_view MARKER_BIAS = "heads.marker.bias";
inline constexpr std::string_view ACT_WEIGHT = "heads.act.weight";
inline constexpr std::string_view ACT_BIAS = "heads.act.bias";

/// How many tensors `spec` needs (without listing them).
std::size_t expected_tensor_count(const ModelSpec& spec);

/// Every tensor `spec` needs, in module order (embedding, layers, final norm, head).
std::vector<TensorSpec> expected_tensors(const ModelSpec& spec);

} // namespace cardsim::models
