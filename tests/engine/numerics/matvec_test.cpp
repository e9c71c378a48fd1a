// The matvec: the fast kernels (AVX2 and portable) against the exact spec on random and adversarial
// matrices and activations, order invariance, and NaN propagation.

#include "engine/error.hpp"
#include "engine/numerics/matvec.hpp"
#include "engine/numerics/spec/matvec.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;
namespace spec = cardsim::numerics::spec;

namespace {

std::vector<WeightFormat> formats() {
    std::vector<WeightFormat> out;
    for (CodeFormat c : {CodeFormat::Int8, CodeFormat::Int4})
        for (ScaleFormat s : {ScaleFormat::E8M0, ScaleFormat::F16})
            for (std::size_t g : {32u, 128u})
                out.push_back(WeightFormat{c, s, g});
    return out;
}

std::vector<Scheme> schemes() {
    return {Scheme{Values{32}, LeastPowerOfTwo{4}, 1},      Scheme{Values{32}, LeastPowerOfTwo{4}, 2},
            Scheme{OfTheWeights{}, LeastPowerOfTwo{23}, 1}, Scheme{OfTheWeights{}, LeastPowerOfTwo{23}, 2},
            Scheme{Row{}, LeastPowerOfTwo{7}, 1},           Scheme{Values{64}, LeastPowerOfTwo{15}, 2},
            Scheme{Values{32}, LeastPowerOfTwoOver255{}, 1}};
}

std::vector<float> make_matrix(std::size_t rows, std::size_t cols, std::mt19937_64& rng) {
    std::vector<float> m;
    for (std::size_t r = 0; r < rows; ++r) {
        auto row = make_row(r % 3 == 0 ? all_row_kinds[(r / 3) % std::size(all_row_kinds)] : RowKind::Normal,
                            cols, rng);
        m.insert(m.end(), row.begin(), row.end());
    }
    return m;
}

std::vector<float> fast(const MatrixView& m, const QuantizedActivation& a) {
    std::vector<float> out(m.layout().rows);
    matvec(m, a, out);
    return out;
}

void require_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("row " << i << ": " << a[i] << " vs " << b[i]);
        REQUIRE(same_bits(a[i], b[i]));
    }
}

} // namespace

TEST_CASE("the matvec agrees with the exact spec on quantised matrices and activations of every kind") {
    std::mt19937_64 rng(31);
    for_each_kernel([&] {
        for (const WeightFormat& f : formats())
            for (const Scheme& s : schemes())
                for (RowKind kind : all_row_kinds) {
                    const std::size_t cols = kind == RowKind::Normal ? 200 : 256;
                    auto w = make_matrix(12, cols, rng);
                    QuantizedMatrix m = quantize_matrix(w, cols, f, 64);
                    auto x = make_row(kind, cols, rng);
                    if (is_unsigned(s.scale))
                        for (float& v : x)
                            v = std::abs(v);
                    QuantizedActivation a = quantize(x, s, f.group);
                    INFO(to_string(f) << " " << to_string(s) << " kind " << static_cast<int>(kind));
                    require_same_bits(fast(m.view(), a), spec::matvec(m.bytes, m.layout, a));
                }
    });
}

TEST_CASE("the matvec agrees with the exact spec on arbitrary bytes: extreme codes and scales, NaN scales") {
    std::mt19937_64 rng(32);
    for_each_kernel([&] {
        for (const WeightFormat& f : formats())
            for (const Scheme& s : schemes()) {
                MatrixLayout l = matrix_layout(16, 160, f, 64);
                std::vector<std::byte> bytes(l.bytes());
                for (auto& b : bytes)
                    b = static_cast<std::byte>(rng());
                // every other row: codes at the extremes (-128 / -8 and 127 / 7) and tame scales
                for (std::size_t r = 0; r < l.rows; r += 2) {
                    for (std::size_t i = 0; i < l.code_bytes(); ++i)
                        bytes[r * l.row_stride() + l.scale_bytes() + i] =
                            static_cast<std::byte>(rng() % 2 ? 0x80 : 0x7F);
                    for (std::size_t i = 0; i < l.scale_bytes(); ++i)
                        bytes[r * l.row_stride() + i] = static_cast<std::byte>(
                            f.scale == ScaleFormat::E8M0 ? 120 + rng() % 8 : (i % 2 ? 0x1C : rng()));
                }
                for (RowKind kind :
                     {RowKind::Normal, RowKind::Wide, RowKind::Extremes, RowKind::Cancelling}) {
                    auto x = make_row(kind, 160, rng);
                    if (is_unsigned(s.scale))
                        for (float& v : x)
                            v = std::abs(v);
                    QuantizedActivation a = quantize(x, s, f.group);
                    INFO(to_string(f) << " " << to_string(s) << " kind " << static_cast<int>(kind));
                    require_same_bits(fast(MatrixView(l, bytes), a), spec::matvec(bytes, l, a));
                }
            }
    });
}

TEST_CASE("a huge dynamic range inside a block and subnormal f16 scales still agree with the spec") {
    std::mt19937_64 rng(33);
    for_each_kernel([&] {
        std::vector<float> w(8 * 64);
        for (std::size_t i = 0; i < w.size(); ++i)
            w[i] = (i % 5 == 0 ? 1e-6f : 1.0f) * (i % 3 ? 1.0f : -1.0f);
        for (std::size_t i = 0; i < 64; ++i)
            w[i] = 1e-7f * static_cast<float>(i); // row 0: subnormal f16 scales
        std::vector<float> x(64);
        for (std::size_t i = 0; i < 64; ++i)
            x[i] = i % 2 ? 3e4f : 1e-30f * static_cast<float>(i);
        for (const WeightFormat& f : formats()) {
            QuantizedMatrix m = quantize_matrix(w, 64, f, 64);
            for (const Scheme& s : schemes()) {
                if (is_unsigned(s.scale)) continue;
                QuantizedActivation a = quantize(x, s, f.group);
                require_same_bits(fast(m.view(), a), spec::matvec(m.bytes, m.layout, a));
            }
        }
    });
}

TEST_CASE("permuting the order of the column groups never changes a bit of the output") {
    std::mt19937_64 rng(34);
    for (const WeightFormat& f : formats())
        for (const Scheme& s : schemes()) {
            if (std::holds_alternative<Values>(s.block) && std::get<Values>(s.block).n > f.group) continue;
            const std::size_t cols = 512, groups = cols / f.group;
            auto w = make_matrix(8, cols, rng);
            auto x = make_row(RowKind::Normal, cols, rng);
            if (is_unsigned(s.scale))
                for (float& v : x)
                    v = std::abs(v);
            std::vector<std::size_t> order(groups);
            std::iota(order.begin(), order.end(), 0);
            const auto want = fast(quantize_matrix(w, cols, f).view(), quantize(x, s, f.group));
            for (int rep = 0; rep < 4; ++rep) {
                std::shuffle(order.begin(), order.end(), rng);
                std::vector<float> pw(w.size()), px(cols);
                for (std::size_t g = 0; g < groups; ++g)
                    for (std::size_t j = 0; j < f.group; ++j) {
                        px[g * f.group + j] = x[order[g] * f.group + j];
                        for (std::size_t r = 0; r < 8; ++r)
                            pw[r * cols + g * f.group + j] = w[r * cols + order[g] * f.group + j];
                    }
                require_same_bits(fast(quantize_matrix(pw, cols, f).view(), quantize(px, s, f.group)), want);
            }
        }
}

TEST_CASE("computing the rows in any split or order gives the same bits as all at once") {
    std::mt19937_64 rng(35);
    auto w = make_matrix(64, 256, rng);
    QuantizedMatrix m = quantize_matrix(w, 256, {CodeFormat::Int4, ScaleFormat::F16, 64});
    QuantizedActivation a =
        quantize(make_row(RowKind::Outliers, 256, rng), Scheme{Values{32}, LeastPowerOfTwo{4}, 2});
    const auto all = fast(m.view(), a);
    PreparedActivation p = prepare(a, m.layout);
    std::vector<std::size_t> rows(64);
    std::iota(rows.begin(), rows.end(), 0);
    std::shuffle(rows.begin(), rows.end(), rng);
    for (std::size_t r : rows) {
        float one = 0;
        matvec(m.view(), p, std::span<float>(&one, 1), r);
        REQUIRE(same_bits(one, all[r]));
    }
}

TEST_CASE("a NaN or infinite activation makes every output NaN and a NaN scale makes its row NaN") {
    std::vector<float> w(4 * 64, 0.25f);
    w[2 * 64 + 7] = std::numeric_limits<float>::quiet_NaN();
    QuantizedMatrix m = quantize_matrix(w, 64, {CodeFormat::Int8, ScaleFormat::E8M0, 32});
    std::vector<float> x(64, 1.0f);
    auto out = fast(m.view(), quantize(x, Scheme{Values{32}, LeastPowerOfTwo{4}, 1}));
    REQUIRE(out[0] == 16.0f);
    REQUIRE(std::isnan(out[2]));
    x[63] = -std::numeric_limits<float>::infinity();
    out = fast(m.view(), quantize(x, Scheme{Values{32}, LeastPowerOfTwo{4}, 1}));
    for (float v : out)
        REQUIRE(std::isnan(v));
}

TEST_CASE("a matvec whose activation does not fit the matrix is refused with a sentence") {
    QuantizedMatrix m =
        quantize_matrix(std::vector<float>(4 * 64, 1.0f), 64, {CodeFormat::Int8, ScaleFormat::E8M0, 32});
    std::vector<float> out(4);
    REQUIRE_THROWS_AS(
        matvec(m.view(), quantize(std::vector<float>(63, 1.0f), Scheme{Values{32}, LeastPowerOfTwo{4}, 1}),
               out),
        cardsim::Error);
    REQUIRE_THROWS_AS(
        matvec(m.view(), quantize(std::vector<float>(64, 1.0f), Scheme{Values{16}, LeastPowerOfTwo{4}, 1}),
               out),
        cardsim::Error);
    std::vector<float> three(3);
    REQUIRE_THROWS_AS(
        matvec(m.view(), quantize(std::vector<float>(64, 1.0f), Scheme{Values{32}, LeastPowerOfTwo{4}, 1}),
               three),
        cardsim::Error);
}

TEST_CASE("the matvec agrees with the exact spec on rows of many scale blocks (the vector row-scale paths)") {
    std::mt19937_64 rng(33);
    for_each_kernel([&] {
        for (const WeightFormat& f : formats())
            for (std::size_t cols : {512u, 608u, 1056u}) { // 16, 19 and 33 blocks of 32
                auto w = make_matrix(6, cols, rng);
                QuantizedMatrix m = quantize_matrix(w, cols, f, 64);
                for (const Scheme& s : schemes()) {
                    auto x = make_row(RowKind::Outliers, cols, rng);
                    if (is_unsigned(s.scale))
                        for (float& v : x)
                            v = std::abs(v);
                    QuantizedActivation a = quantize(x, s, f.group);
                    INFO(to_string(f) << " " << to_string(s) << " cols " << cols);
                    require_same_bits(fast(m.view(), a), spec::matvec(m.bytes, m.layout, a));
                }
            }
    });
}
