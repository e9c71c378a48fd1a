// Weight formats: the fast quantiser's bytes against the spec's, reading bytes back through the
// view, the documented layout, error bounds, and refusals of malformed input.

#include "engine/error.hpp"
#include "engine/numerics/spec/weights.hpp"
#include "engine/numerics/weights.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

std::vector<WeightFormat> formats() {
    std::vector<WeightFormat> out;
    for (CodeFormat c : {CodeFormat::Int8, CodeFormat::Int4})
        for (ScaleFormat s : {ScaleFormat::E8M0, ScaleFormat::F16})
            for (std::size_t g : {32u, 64u, 128u})
                out.push_back(WeightFormat{c, s, g});
    return out;
}

std::vector<float> make_matrix(std::size_t rows, std::size_t cols, std::mt19937_64& rng) {
    std::vector<float> m;
    for (std::size_t r = 0; r < rows; ++r) {
        auto row = make_row(all_row_kinds[r % std::size(all_row_kinds)], cols, rng);
        m.insert(m.end(), row.begin(), row.end());
    }
    return m;
}

} // namespace

TEST_CASE("the weight quantiser writes the same bytes as the exact spec for every format and kernel") {
    std::mt19937_64 rng(11);
    for_each_kernel([&] {
        for (const WeightFormat& f : formats())
            for (std::size_t cols : {128u, 100u}) {
                std::vector<float> w = make_matrix(16, cols, rng);
                w[3 * cols + 5] = std::numeric_limits<float>::quiet_NaN();
                w[9 * cols + 1] = std::numeric_limits<float>::infinity();
                QuantizedMatrix m = quantize_matrix(w, cols, f, 64);
                INFO(to_string(f) << " cols " << cols);
                REQUIRE(m.bytes == spec::quantize_matrix(w, m.layout));
            }
    });
}

TEST_CASE("the vectorised quantiser equals the spec at the edges of f32 with each kernel: subnormals, ties, "
          "the largest values") {
    for_each_kernel([&] {
        // Groups whose largest magnitude is subnormal, tiny and normal at the E8M0 clamp (2^-127),
        // just under and at the rounding point of the exponent (q + 0.5 times a power of two), at
        // the top of f32, and values on code ties (n + 0.5 times the scale).
        std::mt19937_64 rng(13);
        std::vector<float> tops = {std::numeric_limits<float>::denorm_min(),
                                   0x1p-140f,
                                   0x1.fffffep-127f,
                                   0x1p-126f,
                                   0x1p-121f,
                                   127.5f * 0x1p-120f,
                                   std::nextafter(127.5f, 0.0f),
                                   127.5f,
                                   7.5f,
                                   std::nextafter(7.5f, 0.0f),
                                   1.0f,
                                   3.0e38f,
                                   std::numeric_limits<float>::max()};
        for (const WeightFormat& f : formats()) {
            const std::size_t cols = 96;
            std::vector<float> w;
            for (float top : tops) {
                std::vector<float> row(cols);
                for (std::size_t c = 0; c < cols; ++c) {
                    const float u = static_cast<float>(static_cast<int>(rng() % 255) - 127) / 127.0f;
                    row[c] = c % 3 == 0 ? top * u
                                        : (c % 3 == 1 ? (static_cast<float>(c % 16) + 0.5f) / 16.0f * top
                                                      : -top / static_cast<float>(1 + c % 7));
                }
                row[0] = top;
                w.insert(w.end(), row.begin(), row.end());
            }
            QuantizedMatrix m = quantize_matrix(w, cols, f, 64);
            INFO(to_string(f));
            REQUIRE(m.bytes == spec::quantize_matrix(w, m.layout));
        }
    });
}

TEST_CASE("quantising a matrix's rows in blocks gives the bytes of quantising it whole") {
    std::mt19937_64 rng(14);
    for (const WeightFormat& f : formats()) {
        const std::size_t rows = 12, cols = 100;
        std::vector<float> w = make_matrix(rows, cols, rng);
        QuantizedMatrix whole = quantize_matrix(w, cols, f, 64);
        const std::size_t stride = whole.layout.row_stride();
        std::vector<std::byte> blocks(whole.bytes.size(), std::byte{0x5A});
        for (std::size_t first = 0; first < rows; first += 5) {
            const std::size_t n = std::min<std::size_t>(5, rows - first);
            quantize_into(std::span<const float>(w).subspan(first * cols, n * cols),
                          matrix_layout(n, cols, f, 64),
                          std::span(blocks).subspan(first * stride, n * stride));
        }
        INFO(to_string(f));
        REQUIRE(blocks == whole.bytes);
    }
}

TEST_CASE("the view reads every code and scale of arbitrary bytes as the layout documents") {
    std::mt19937_64 rng(12);
    for (const WeightFormat& f : formats()) {
        MatrixLayout l = matrix_layout(5, 200, f, 32);
        std::vector<std::byte> bytes(l.bytes());
        for (auto& b : bytes)
            b = static_cast<std::byte>(rng());
        MatrixView v(l, bytes);
        for (std::size_t r = 0; r < l.rows; ++r) {
            for (std::size_t c = 0; c < l.padded_cols(); ++c)
                REQUIRE(v.code(r, c) == spec::weight_code(bytes, l, r, c));
            for (std::size_t g = 0; g < l.groups(); ++g) {
                GroupScale s = v.scale(r, g);
                auto want = spec::weight_scale(bytes, l, r, g);
                REQUIRE(s.nan == !want.has_value());
                if (want) REQUIRE(spec::Rational(s.significand) * spec::power_of_two(s.exponent) == *want);
            }
        }
    }
}

TEST_CASE("the matrix layout puts scales then codes in each row, padded to the row alignment") {
    // 4096 x 4096 int4 with E8M0 scales per 32: 2048 code bytes + 128 scale bytes = 2176 = 34 x 64.
    MatrixLayout a = matrix_layout(4096, 4096, {CodeFormat::Int4, ScaleFormat::E8M0, 32}, 64);
    REQUIRE(a.code_bytes() == 2048);
    REQUIRE(a.scale_bytes() == 128);
    REQUIRE(a.row_stride() == 2176);
    REQUIRE(a.bytes() == 4096u * 2176u);
    // 3 x 100 int8 with f16 scales per 64: 2 groups, 128 code bytes + 4 scale bytes -> 192.
    MatrixLayout b = matrix_layout(3, 100, {CodeFormat::Int8, ScaleFormat::F16, 64}, 64);
    REQUIRE(b.padded_cols() == 128);
    REQUIRE(b.row_stride() == 192);
    // A tiny hand-built int4 matrix: one row, 32 columns, codes c_j = (j % 15) - 7, scale 2^-3.
    std::vector<float> w(32);
    for (std::size_t j = 0; j < 32; ++j)
        w[j] = static_cast<float>(static_cast<int>(j % 15) - 7) * 0.125f;
    QuantizedMatrix m = quantize_matrix(w, 32, {CodeFormat::Int4, ScaleFormat::E8M0, 32}, 64);
    REQUIRE(m.bytes.size() == 64);
    REQUIRE(static_cast<std::uint8_t>(m.bytes[0]) == 127 - 3); // the scale 2^-3 first: amax 7/8 -> code 7
    for (std::size_t j = 0; j < 16; ++j) {
        const int lo = static_cast<int>(j % 15) - 7, hi = static_cast<int>((j + 16) % 15) - 7;
        REQUIRE(static_cast<std::uint8_t>(m.bytes[1 + j]) == ((lo & 0xF) | (hi & 0xF) << 4));
    }
    for (std::size_t j = 17; j < 64; ++j)
        REQUIRE(m.bytes[j] == std::byte{0});
}

TEST_CASE("quantise then dequantise errs by at most half a step, or by the saturation of an f16 scale") {
    std::mt19937_64 rng(13);
    for (const WeightFormat& f : formats()) {
        std::vector<float> w = make_matrix(16, 128, rng);
        QuantizedMatrix m = quantize_matrix(w, 128, f, 64);
        MatrixView v = m.view();
        const int q = max_weight_code(f.codes);
        for (std::size_t r = 0; r < 16; ++r) {
            std::vector<float> back = v.dequantize_row(r);
            for (std::size_t g = 0; g < v.layout().groups(); ++g) {
                GroupScale s = v.scale(r, g);
                spec::Rational step = spec::Rational(s.significand) * spec::power_of_two(s.exponent);
                spec::Rational amax = 0;
                for (std::size_t c = g * f.group; c < (g + 1) * f.group; ++c)
                    amax = std::max(amax, spec::Rational(abs(spec::value(w[r * 128 + c]))));
                spec::Rational bound = step / 2;
                if (amax - q * step > bound) bound = amax - q * step;
                if (f.scale == ScaleFormat::E8M0 && s.exponent == -127)
                    bound = std::max(bound, amax); // clamped k
                for (std::size_t c = g * f.group; c < (g + 1) * f.group; ++c)
                    REQUIRE(spec::Rational(abs(spec::value(w[r * 128 + c]) - spec::value(back[r * 0 + c]))) <=
                            bound);
            }
        }
    }
}

TEST_CASE("a weight group with a NaN or an infinity stores a NaN scale and zero codes") {
    std::vector<float> w(64, 0.5f);
    w[40] = -std::numeric_limits<float>::infinity();
    for (ScaleFormat s : {ScaleFormat::E8M0, ScaleFormat::F16}) {
        QuantizedMatrix m = quantize_matrix(w, 64, {CodeFormat::Int8, s, 32}, 64);
        MatrixView v = m.view();
        REQUIRE_FALSE(v.scale(0, 0).nan);
        REQUIRE(v.scale(0, 1).nan);
        for (std::size_t c = 32; c < 64; ++c)
            REQUIRE(v.code(0, c) == 0);
        std::vector<float> back = v.dequantize_row(0);
        REQUIRE(std::abs(back[0] - 0.5f) <=
                0.5f * 0x1p-10f); // exact for E8M0, within the f16 scale's rounding
        REQUIRE(std::isnan(back[33]));
    }
}

TEST_CASE("f16 and bf16 checkpoint tensors quantise as their exact f32 values") {
    std::mt19937_64 rng(14);
    std::vector<float> w = make_matrix(4, 64, rng);
    std::vector<F16> h(w.size());
    std::vector<BF16> b(w.size());
    std::vector<float> hf(w.size()), bf(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
        h[i] = to_f16(w[i]), hf[i] = to_f32(h[i]);
        b[i] = to_bf16(w[i]), bf[i] = to_f32(b[i]);
    }
    WeightFormat f{CodeFormat::Int4, ScaleFormat::F16, 32};
    REQUIRE(quantize_matrix(std::span<const F16>(h), 64, f).bytes == quantize_matrix(hf, 64, f).bytes);
    REQUIRE(quantize_matrix(std::span<const BF16>(b), 64, f).bytes == quantize_matrix(bf, 64, f).bytes);
}

TEST_CASE("malformed weight formats and byte counts are refused with a sentence") {
    REQUIRE_THROWS_AS(matrix_layout(4, 64, {CodeFormat::Int8, ScaleFormat::E8M0, 48}), cardsim::Error);
    REQUIRE_THROWS_AS(matrix_layout(4, 64, {CodeFormat::Int8, ScaleFormat::E8M0, 0}), cardsim::Error);
    REQUIRE_THROWS_AS(matrix_layout(4, 64, {CodeFormat::Int8, ScaleFormat::E8M0, 32}, 48), cardsim::Error);
    MatrixLayout l = matrix_layout(4, 64, {CodeFormat::Int8, ScaleFormat::E8M0, 32});
    std::vector<std::byte> short_bytes(l.bytes() - 1);
    REQUIRE_THROWS_AS(MatrixView(l, short_bytes), cardsim::Error);
    std::vector<float> w(63);
    REQUIRE_THROWS_AS(quantize_matrix(w, 64, l.format), cardsim::Error);
}
