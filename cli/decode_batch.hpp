#pragma once
// The sequences a decoder run steps together: one token row each a step, each with its own prompt,
// positions and cache or state rows (row r of a decode bucket is sequence r).

#include "engine/graph/batch.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::cli {

/// Row `r`'s token of a next-token output (one f32 a row holding the arg-max); 0 past its rows (a
/// timing-only run's outputs hold none).
std::uint32_t row_token(std::span<const std::byte> next, std::size_t r);

/// The prompt of sequence `seq` when none is given: the ids (1, 17, 42, 7) plus 101 × `seq`, modulo
/// `vocab` (sequence 0's is the fixed prompt of a one-sequence run).
std::vector<std::uint32_t> default_prompt(std::size_t seq, std::size_t vocab);

/// The markers of an encoder run over `n` tokens: every fourth token.
std::vector<std::size_t> encoder_markers(std::size_t n);

/// The prompts of a run of `seqs` sequences: the given ones first, in order, then default ones.
/// Refuses (cardsim::Error) more prompts than sequences.
std::vector<std::vector<std::uint32_t>> batch_prompts(std::span<const std::vector<std::uint32_t>> given,
                                                      std::size_t seqs, std::size_t vocab);

/// A decode batch: every sequence starts at position 0 in step 0 and feeds its prompt one token a
/// step, then its own previous arg-max, until the run's last step; the run takes as many steps as
/// the longest prompt and `tokens` generated tokens need. So a sequence with a shorter prompt
/// generates more tokens than `tokens` (what it would generate alone in as many steps). With a
/// `first_position`, step 0 is at that position instead (the decode after a prefilled prompt).
class DecodeBatch {
public:
    DecodeBatch(std::vector<std::vector<std::uint32_t>> prompts, std::size_t tokens,
                std::uint32_t first_position = 0);

    std::size_t seqs() const { return fed_.size(); }
    std::size_t steps() const { return steps_; }
    /// The longest prompt: the steps after which every sequence is generating.
    std::size_t prefill_steps() const;
    const std::vector<std::uint32_t>& prompt(std::size_t seq) const { return prompts_[seq]; }

    /// The inputs of step `step` (steps in order): row r feeds sequence r's next token, at position
    /// `first_position + step`. `next` is the previous step's arg-max output (one f32 row per sequence;
    /// fewer, as in a timing-only run: 0 is fed).
    graph::BatchInputs inputs(std::size_t step, std::span<const std::byte> next);
    /// The inputs of step `step` for sequences `first .. first + count` only (a microbatch of a
    /// pipeline, each group's steps in order): row r feeds sequence first + r and names it as its
    /// store slot; `next` is that group's previous step's arg-max output.
    graph::BatchInputs inputs(std::size_t step, std::span<const std::byte> next, std::size_t first,
                              std::size_t count);
    /// Appends the last step's arg-max to each sequence's generated tokens.
    void finish(std::span<const std::byte> next);

    /// Sequence `seq`'s tokens fed (and, after `finish`, the last one generated).
    const std::vector<std::uint32_t>& tokens(std::size_t seq) const { return fed_[seq]; }
    /// Sequence `seq`'s generated tokens (after `finish`).
    std::vector<std::uint32_t> generated(std::size_t seq) const;

private:
    std::vector<std::vector<std::uint32_t>> prompts_, fed_;
    std::size_t steps_ = 0;
    std::uint32_t first_position_ = 0;
};

} // namespace cardsim::cli
