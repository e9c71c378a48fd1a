#pragma once
// The matvec unit's arithmetic: every row of a quantised matrix times a quantised activation row,
// each output the contract's exact block sum rounded once to f32.
//
// The contract, for output row r: the row's columns are split into chunks of DOT_BLOCK = 32 (the
// padding columns of the matrix have zero codes, and the activation is zero there). For chunk i
// and activation word w:
//   d_{i,w} = sum over the chunk of weight code x activation code      (exact integer, |d| < 2^36)
//   term_{i,w} = d_{i,w} x m_g x 2^(e_g + a_{w,b})
// where the chunk lies in weight group g with scale m_g x 2^e_g (E8M0: m = 1; f16: its parts) and in
// activation block b with exponent a_{w,b}. out[r] = window_sum of all terms (exact_sum.hpp): exact
// in the 64-place window below the largest term, rounded once to f32. A NaN weight scale in the row
// or a NonFinite activation block makes out[r] a NaN (0x7FC00000).
//
// The activation's blocks must each cover whole chunks: a block size that is a multiple of 32, or
// one block covering the row. The order in which chunks, words or rows are computed never changes
// a bit.

#include "engine/numerics/activation.hpp"
#include "engine/numerics/kernel.hpp"
#include "engine/numerics/partial_sum.hpp"
#include "engine/numerics/weights.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::numerics {

/// An activation row laid out for the matvec kernels: its codes in int8 planes (when every code
/// fits 7 bits) or int16 planes (a code of more than 15 bits split as hi x 2^12 + lo), zero up to
/// the matrix's padded columns, and each plane's exponent per chunk. Build it once per activation
/// row with `prepare`, use it for every row of the matrix.
struct PreparedActivation {
    std::size_t cols = 0, padded_cols = 0, chunks = 0;
    int words = 1;
    int planes = 1;                          ///< words x parts
    bool narrow = true;                      ///< int8 planes (else int16)
    std::vector<std::int8_t> codes8;         ///< planes x padded_cols
    std::vector<std::int16_t> codes16;       ///< planes x padded_cols
    std::vector<int> plane_word;             ///< the word of each plane
    std::vector<int> plane_shift;            ///< the place of each plane's codes within its word's code
    std::vector<std::int32_t> exponent;      ///< words x chunks: the word's block exponent at each chunk
    std::vector<std::int32_t> lane_exponent; ///< narrow, <= 2 planes: exponent + plane shift, 8 lanes a group
    std::vector<std::uint8_t> live;          ///< words x chunks: whether the word has a nonzero code there
    bool nonfinite = false;                  ///< some block is NonFinite: every output is NaN
    bool any_live = false;                   ///< some code is nonzero
    int exponent_min = 0, exponent_max = 0;  ///< over live (word, chunk)
    std::int64_t max_code = 0;               ///< the largest |code| of any word
};

/// Lays `a` out for a matrix of `layout`. Throws cardsim::Error when the lengths disagree or the
/// activation's blocks do not cover whole chunks.
PreparedActivation prepare(const QuantizedActivation& a, const MatrixLayout& layout);

/// out[k] = the contract's output of matrix row first_row + k, for k < out.size().
void matvec(const MatrixView& m, const PreparedActivation& a, std::span<float> out,
            std::size_t first_row = 0);

/// out[k] = the exact part (partial_sum.hpp) of matrix row first_row + k that these columns make:
/// the columns of a tensor-parallel card, whose parts `join` rounds into the contract's output.
void matvec_partial(const MatrixView& m, const PreparedActivation& a, std::span<PartialSum> out,
                    std::size_t first_row = 0);

/// Every row: out.size() must be the matrix's rows.
void matvec(const MatrixView& m, const QuantizedActivation& a, std::span<float> out);

} // namespace cardsim::numerics
