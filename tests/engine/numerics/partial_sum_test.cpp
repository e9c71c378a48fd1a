// Tensor-parallel partial sums: a matvec's columns split over cards, each card's exact part, and
// the join that gives the one-card contract's bits.

#include "engine/numerics/matvec.hpp"
#include "engine/numerics/partial_sum.hpp"
#include "generators.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace cardsim::numerics;
using namespace cardsim::numerics::testing;

namespace {

/// Columns first .. first + count of the row-major rows x cols matrix `w`.
std::vector<float> columns(const std::vector<float>& w, std::size_t cols, std::size_t first,
                           std::size_t count) {
    std::vector<float> out;
    for (std::size_t r = 0; r < w.size() / cols; ++r)
        out.insert(out.end(), w.begin() + std::ptrdiff_t(r * cols + first),
                   w.begin() + std::ptrdiff_t(r * cols + first + count));
    return out;
}

struct Split {
    std::vector<float> one;       ///< the one-card outputs
    std::vector<float> joined;    ///< the joined parts
    std::size_t inexact_rows = 0; ///< rows whose parts do not join exactly
    std::vector<bool> exact;      ///< per row: whether its parts join exactly
};

/// The one-card matvec of `w` (rows x cols) by `x`, and the join of its `cards` column parts.
Split split(const std::vector<float>& w, const std::vector<float>& x, std::size_t cols, std::size_t cards,
            const WeightFormat& f, const Scheme& s) {
    const std::size_t rows = w.size() / cols, part = cols / cards;
    Split out;
    out.one.resize(rows);
    matvec(quantize_matrix(w, cols, f).view(), quantize(x, s, f.group), out.one);
    std::vector<std::vector<PartialSum>> parts(cards, std::vector<PartialSum>(rows));
    for (std::size_t c = 0; c < cards; ++c) {
        auto m = quantize_matrix(columns(w, cols, c * part, part), part, f);
        std::vector<float> xc(x.begin() + std::ptrdiff_t(c * part),
                              x.begin() + std::ptrdiff_t((c + 1) * part));
        matvec_partial(m.view(), prepare(quantize(xc, s, f.group), m.view().layout()), parts[c]);
    }
    for (std::size_t r = 0; r < rows; ++r) {
        std::vector<PartialSum> row;
        for (std::size_t c = 0; c < cards; ++c) {
            // Each part crosses a link as its 24 bytes.
            std::array<std::byte, PARTIAL_BYTES> wire{};
            encode(parts[c][r], wire);
            row.push_back(decode_partial(wire));
            REQUIRE(row.back() == parts[c][r]);
        }
        out.joined.push_back(join(row));
        out.exact.push_back(exact_join(row));
        if (!out.exact.back()) ++out.inexact_rows;
    }
    return out;
}

} // namespace

TEST_CASE("a matvec split over the columns of 2 and 4 cards joins to the one-card bits") {
    std::mt19937_64 rng(71);
    std::size_t inexact = 0, rows_checked = 0;
    for (CodeFormat c : {CodeFormat::Int8, CodeFormat::Int4})
        for (ScaleFormat sc : {ScaleFormat::E8M0, ScaleFormat::F16})
            for (const Scheme& s :
                 {Scheme{Values{32}, LeastPowerOfTwo{4}, 1}, Scheme{Values{32}, LeastPowerOfTwo{4}, 2},
                  Scheme{OfTheWeights{}, LeastPowerOfTwo{23}, 1}})
                for (RowKind kind : {RowKind::Normal, RowKind::Unit, RowKind::Outliers, RowKind::Ties,
                                     RowKind::Cancelling, RowKind::Zeros})
                    for (std::size_t cards : {2u, 4u}) {
                        const WeightFormat f{c, sc, 32};
                        const std::size_t cols = 512, rows = 24;
                        std::vector<float> w;
                        for (std::size_t r = 0; r < rows; ++r) {
                            auto row = make_row(r % 2 ? kind : RowKind::Normal, cols, rng);
                            w.insert(w.end(), row.begin(), row.end());
                        }
                        auto x = make_row(kind, cols, rng);
                        auto got = split(w, x, cols, cards, f, s);
                        inexact += got.inexact_rows;
                        rows_checked += rows;
                        for (std::size_t r = 0; r < rows; ++r) {
                            INFO("row " << r << " of " << cards << " cards: " << got.one[r] << " vs "
                                        << got.joined[r]);
                            REQUIRE(same_bits(got.one[r], got.joined[r]));
                        }
                    }
    // Every row of these kinds lies within one window: the join was exact each time.
    REQUIRE(inexact == 0);
    REQUIRE(rows_checked > 1000);
}

TEST_CASE("parts whose terms span more than the window are flagged and still join order-free") {
    std::mt19937_64 rng(72);
    const WeightFormat f{CodeFormat::Int8, ScaleFormat::E8M0, 32};
    const Scheme s{Values{32}, LeastPowerOfTwo{4}, 1};
    const std::size_t cols = 256;
    std::size_t flagged = 0;
    for (int rep = 0; rep < 8; ++rep) {
        std::vector<float> w;
        for (std::size_t r = 0; r < 8; ++r) {
            auto row = make_row(RowKind::Wide, cols, rng);
            w.insert(w.end(), row.begin(), row.end());
        }
        auto x = make_row(RowKind::Wide, cols, rng);
        auto got = split(w, x, cols, 2, f, s);
        flagged += got.inexact_rows;
        // Where the join is exact the bits are the one card's.
        auto again = split(w, x, cols, 2, f, s);
        REQUIRE(again.joined.size() == got.joined.size());
        for (std::size_t r = 0; r < got.joined.size(); ++r) {
            REQUIRE(same_bits(again.joined[r], got.joined[r]));
            if (got.exact[r]) REQUIRE(same_bits(got.one[r], got.joined[r]));
        }
    }
    REQUIRE(flagged > 0); // values over the whole f32 range do leave the window
    // The join of a set of parts does not depend on their order.
    PartialSum a{(static_cast<__int128>(1) << 100) + 12345, -300, -150, 0};
    PartialSum b{-987654321, 10, 60, PartialSum::Exact};
    std::array<PartialSum, 2> ab{a, b}, ba{b, a};
    REQUIRE_FALSE(exact_join(ab));
    REQUIRE(same_bits(join(ab), join(ba)));
}

TEST_CASE("a NaN part makes the joined output NaN and an empty part changes nothing") {
    PartialSum nan{0, 0, 0, PartialSum::Nan};
    PartialSum empty{0, 0, 0, PartialSum::Exact};
    PartialSum three{3, 0, 2, PartialSum::Exact};
    std::array<PartialSum, 2> with_nan{three, nan}, with_empty{three, empty};
    REQUIRE(std::isnan(join(with_nan)));
    REQUIRE(join(with_empty) == 3.0f);
    REQUIRE(exact_join(with_empty));
}
