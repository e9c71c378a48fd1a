#pragma once
// The f64 reference: an independent forward pass in plain double, straight from the checkpoint's
// config.json and tensors (no graph, no numerics library, none of the recognisers' code), written
// from transformers' modeling files (models/README.md). It measures how far the card's numerics are
// from the model, and checks the graph builders through the f64 graph evaluator.

#include "models/checkpoint.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace cardsim::models {

/// The reference of a decoder checkpoint (qwen3, qwen2, llama, qwen3_next, qwen3_5).
class DecoderReference {
public:
    /// Reads the config; the matrices are read from `checkpoint` as they are used (see
    /// reference::Linear), so it must outlive the reference. Throws cardsim::Error
    /// naming the file for an unknown model type or a missing field or tensor.
    explicit DecoderReference(const Checkpoint& checkpoint);
    ~DecoderReference();
    DecoderReference(DecoderReference&&) noexcept;
    DecoderReference& operator=(DecoderReference&&) noexcept;

    /// One sequence being decoded: its KV caches, conv histories and Gated-DeltaNet states in double.
    /// Refers to its DecoderReference, which must outlive it. Move-only.
    class Session {
    public:
        ~Session();
        Session(Session&&) noexcept;
        Session& operator=(Session&&) noexcept;
        /// Feeds the next token; returns the logits after it (vocab wide). A token outside the
        /// vocabulary is a cardsim::Error.
        std::vector<double> feed(std::int64_t token);
        /// Feeds `tokens` in order, as as many `feed` calls would and with their values bit for
        /// bit, but a layer at a time over all of them, so that each matrix is read once for the
        /// lot. Returns the logits after token i when `want(i)`; the others are empty (their LM
        /// head is skipped).
        std::vector<std::vector<double>> feed(std::span<const std::int64_t> tokens,
                                              const std::function<bool(std::size_t)>& want);
        /// Tokens fed so far.
        std::size_t length() const { return length_; }

    private:
        friend class DecoderReference;
        struct Layers; ///< per layer: KV cache, conv history, delta state
        explicit Session(const DecoderReference& ref);
        const DecoderReference* ref_;
        std::unique_ptr<Layers> layers_;
        std::size_t length_ = 0;
    };

    /// A new, empty sequence.
    Session start() const;
    /// The logits after each token of `prompt`, in a fresh sequence.
    std::vector<std::vector<double>> prompt_logits(std::span<const std::int64_t> prompt) const;

    /// Greedy decoding: the tokens chosen after `prompt` (arg-max, lowest index among equals) and the
    /// logits each was chosen from; `logits[0]` are the logits after the prompt's last token.
    struct Greedy {
        std::vector<std::int64_t> tokens;
        std::vector<std::vector<double>> logits;
    };
    Greedy greedy(std::span<const std::int64_t> prompt, std::size_t steps) const;

    /// The vocabulary size.
    std::size_t vocab() const;

    /// The config values and tensors in double (defined with the forward pass).
    struct Weights;

private:
    std::unique_ptr<Weights> w_;
};

/// The reference of the encoder (modernbert with the heads of models/README.md).
class EncoderReference {
public:
    /// Reads the config and every tensor into double; cardsim::Error naming the file when one is missing.
    explicit EncoderReference(const Checkpoint& checkpoint);
    ~EncoderReference();
    EncoderReference(EncoderReference&&) noexcept;
    EncoderReference& operator=(EncoderReference&&) noexcept;

    /// What one sequence gives.
    struct Result {
        std::vector<std::vector<double>> hidden; ///< after the final norm, per token
        std::vector<double> marker_logits;       ///< per marker
        std::vector<double> features; ///< the act head's input: h[0], top1, top1 − top2, H / ln k, k/255
        std::array<double, 2> act{};
    };
    /// Runs one sequence with its question type and markers (positions in the sequence).
    Result run(std::span<const std::int64_t> tokens, std::size_t question_type,
               std::span<const std::size_t> markers) const;

    /// The config values and tensors in double (defined with the forward pass).
    struct Weights;

private:
    std::unique_ptr<Weights> w_;
};

} // namespace cardsim::models
