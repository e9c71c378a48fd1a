#pragma once
// Block-quantised weight matrices: the code and scale formats, the quantiser the compile step runs
// on checkpoint tensors, and the byte layout of a quantised matrix in the card's DDR image (the
// lowering writes exactly these bytes; the matvec unit reads them through MatrixView).
//
// Quantiser (per scale group of `group` consecutive values of a row; Q = 127 for int8, 7 for int4;
// amax = max |x| over the group):
// - E8M0: the scale is 2^k, k the least integer >= -127 with round_half_even(amax / 2^k) <= Q
//   (k <= 127 for every finite f32); codes round_half_even(x / 2^k) saturated to [-Q, Q]. A zero
//   group stores k = -127 and zero codes. Unlike OCP MX (which takes k = floor(log2 amax) - emax
//   and saturates) the code of amax never saturates, except below 2^-127 where k is clamped.
// - F16: the scale d is amax / Q rounded once to f16 (nearest even), clamped to 65504; codes
//   round_half_even(x / d) (the exact quotient) saturated to [-Q, Q]. A group whose d is 0 stores
//   +0 and zero codes.
// - a group holding a NaN or an infinity stores a NaN scale (E8M0 0xFF, f16 0x7E00) and zero
//   codes: every output of its row is NaN.
// Codes are never -128 (int8) or -8 (int4) from the quantiser; a view reads them if bytes hold them.
//
// Byte layout (little-endian), `rows` rows of `row_stride` bytes, row r at byte r * row_stride:
//   [scales of the row][codes of the row][zero bytes up to row_stride]
// Scales come first so a unit streaming the row knows its exponent range (the accumulator window)
// before the codes arrive, and a row is one ascending stream of bytes.
// - scales: one per group in column order. E8M0: one byte X, the scale 2^(X - 127), 0xFF NaN (an
//   OCP MX INT8 block, whose element is code x 2^-6, has X_ours = X_mx - 6). F16: two bytes,
//   binary16 little-endian.
// - codes, from byte scale_bytes of the row: padded_cols = groups x group codes (columns from `cols` up are
// zero codes).
//   int8: byte c is column c's code, two's complement.
//   int4: 16 bytes per block of 32 columns; block b's byte j (at 16 b + j) holds column 32 b + j in
//   its low nibble and column 32 b + j + 16 in its high nibble, 4-bit two's complement.
// - row_stride = scale bytes + code bytes rounded up to `row_align` (a card config value: the DDR
//   user port is 64 bytes on the D5005).

#include "engine/numerics/half.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cardsim::numerics {

/// Values per integer dot: the block of the weight codes and the chunk the matvec sums exactly.
inline constexpr std::size_t DOT_BLOCK = 32;

/// How a weight code is stored.
enum class CodeFormat : std::uint8_t { Int8, Int4 };
/// How a group's scale is stored.
enum class ScaleFormat : std::uint8_t { E8M0, F16 };

/// A weight format: codes, scales, and values per scale group (a multiple of DOT_BLOCK).
struct WeightFormat {
    CodeFormat codes = CodeFormat::Int8;
    ScaleFormat scale = ScaleFormat::E8M0;
    std::size_t group = DOT_BLOCK;
    friend bool operator==(const WeightFormat&, const WeightFormat&) = default;
};

/// `int8`, `int4`; `e8m0`, `f16`; a format as `int8/e8m0/g32`.
std::string_view name(CodeFormat c);
std::string_view name(ScaleFormat s);
std::string to_string(const WeightFormat& f);

/// The largest code magnitude the quantiser writes: 127 (int8) or 7 (int4).
int max_weight_code(CodeFormat c);

/// Where everything of a quantised matrix is in its bytes (see the layout above).
struct MatrixLayout {
    std::size_t rows = 0;
    std::size_t cols = 0;
    WeightFormat format;
    std::size_t row_align = 64;

    /// Scale groups per row: ceil(cols / group).
    std::size_t groups() const { return (cols + format.group - 1) / format.group; }
    /// Columns with codes per row: groups() x group.
    std::size_t padded_cols() const { return groups() * format.group; }
    /// Bytes of a row's codes.
    std::size_t code_bytes() const {
        return format.codes == CodeFormat::Int8 ? padded_cols() : padded_cols() / 2;
    }
    /// Bytes of a row's scales.
    std::size_t scale_bytes() const { return groups() * (format.scale == ScaleFormat::E8M0 ? 1 : 2); }
    /// Bytes from one row to the next.
    std::size_t row_stride() const {
        return (code_bytes() + scale_bytes() + row_align - 1) / row_align * row_align;
    }
    /// Bytes of the whole matrix.
    std::size_t bytes() const { return rows * row_stride(); }
    friend bool operator==(const MatrixLayout&, const MatrixLayout&) = default;
};

/// The layout of a rows x cols matrix in `format`, checked: group a positive multiple of 32,
/// row_align a power of two. Throws cardsim::Error naming what is wrong.
MatrixLayout matrix_layout(std::size_t rows, std::size_t cols, WeightFormat format,
                           std::size_t row_align = 64);

/// A decoded group scale: significand x 2^exponent (E8M0: 1 x 2^(X-127); F16: its parts), or a NaN
/// (E8M0 0xFF, or an f16 inf/NaN).
struct GroupScale {
    std::int32_t significand = 0;
    int exponent = 0;
    bool nan = false;
};

/// The scale an E8M0 byte stands for.
GroupScale decode_e8m0(std::uint8_t x);
/// The scale an f16 stands for (inf counts as NaN: no finite code times it is a number).
GroupScale decode_f16_scale(F16 h);

/// A quantised matrix read from bytes (not owned). The constructor checks the byte count.
class MatrixView {
public:
    /// Views `bytes` as a matrix of `layout`; throws cardsim::Error when the size is not
    /// layout.bytes() (`what` names the source in the message).
    MatrixView(const MatrixLayout& layout, std::span<const std::byte> bytes,
               std::string_view what = "matrix");

    const MatrixLayout& layout() const { return layout_; }
    /// Row r's bytes (row_stride of them).
    std::span<const std::byte> row(std::size_t r) const {
        return bytes_.subspan(r * layout_.row_stride(), layout_.row_stride());
    }
    /// Row r's code bytes (after its scales).
    std::span<const std::byte> codes(std::size_t r) const {
        return row(r).subspan(layout_.scale_bytes(), layout_.code_bytes());
    }
    /// Row r's scale bytes (the first of the row).
    std::span<const std::byte> scales(std::size_t r) const { return row(r).first(layout_.scale_bytes()); }
    /// The code of row r, column c (r < rows, c < padded_cols).
    int code(std::size_t r, std::size_t c) const;
    /// The scale of row r, group g (r < rows, g < groups).
    GroupScale scale(std::size_t r, std::size_t g) const;
    /// Row r dequantised: code x scale (exact in f32), NaN throughout a NaN group; cols values.
    std::vector<float> dequantize_row(std::size_t r) const;

private:
    MatrixLayout layout_;
    std::span<const std::byte> bytes_;
};

/// A quantised matrix that owns its bytes.
struct QuantizedMatrix {
    MatrixLayout layout;
    std::vector<std::byte> bytes;
    MatrixView view() const { return MatrixView(layout, bytes); }
};

/// The F16-scale rule on one group of values (above; also the Int8Rows keep rule): writes
/// x.size() codes within +-max_code into `codes` and returns the scale (NaN for a group holding a
/// NaN or an infinity, with zero codes).
F16 quantize_f16_group(std::span<const float> x, int max_code, std::span<std::int8_t> codes);

/// Quantises a row-major rows x cols tensor (rows = values.size() / cols) into `layout`'s bytes,
/// writing all of `out` (layout.bytes() bytes: codes, scales, zero padding). Throws cardsim::Error
/// when the sizes disagree.
void quantize_into(std::span<const float> values, const MatrixLayout& layout, std::span<std::byte> out);

/// Quantises a row-major f32 tensor of `cols` columns into a new matrix of `format`.
QuantizedMatrix quantize_matrix(std::span<const float> values, std::size_t cols, WeightFormat format,
                                std::size_t row_align = 64);
/// The same for an f16 tensor (converted exactly to f32 first).
QuantizedMatrix quantize_matrix(std::span<const F16> values, std::size_t cols, WeightFormat format,
                                std::size_t row_align = 64);
/// The same for a bf16 tensor (converted exactly to f32 first).
QuantizedMatrix quantize_matrix(std::span<const BF16> values, std::size_t cols, WeightFormat format,
                                std::size_t row_align = 64);

} // namespace cardsim::numerics
