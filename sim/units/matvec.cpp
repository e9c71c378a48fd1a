// The matvec unit: streams a packed checkpoint matrix from DDR and multiplies each activation row
// by it (block-integer dots, exact sums rounded to f32 once), then the bias and the epilogue; a
// merged matvec splits each row's outputs over up to three values.

#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/program/epilogue.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/packed.hpp"
#include "sim/units/unit_of.hpp"

#include <algorithm>

namespace cardsim::sim::units {
namespace {

class Matvec final : public UnitOf<program::slots::Matvec> {
    using S = program::slots::Matvec; ///< the command slots this unit reads

public:
    explicit Matvec(const card::CardConfig& config)
        : UnitOf(card::UnitKind::Matvec), config_(config),
          scheme_(kernels::activation_scheme(config.numerics)),
          passes_(config.numerics.activations == numerics::Words::Two ? 2 : 1) {}

    /// MACs: rows · n · k, once per activation word (the second word, the residual of the first,
    /// takes a second pass through the lanes).
    std::uint64_t work(const program::Command& c, const Step&) const override {
        auto d = program::args<S>(c).dims;
        return d.rows * d.n * d.k * passes_;
    }

    void compute(const program::Command& c, Operands operands) const override {
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        auto w = packed_matrix(config_, o.w, d.n, d.k);
        auto epilogue = program::epilogue_of(c.flags);
        if (d.n1 == d.n) {
            kernels::matvec(w, f32s(o.x), scheme_, epilogue, f32s(o.b), f32s(o.out));
            return;
        }
        std::vector<float> y(d.rows * d.n);
        kernels::matvec(w, f32s(o.x), scheme_, epilogue, f32s(o.b), y);
        auto out1 = f32s(o.out), out2 = f32s(o.out2), out3 = f32s(o.out3);
        const std::size_t n = d.n, n1 = d.n1, n2 = d.n2, n3 = n - n1 - n2;
        for (std::size_t r = 0; r < d.rows; ++r) {
            std::copy_n(y.begin() + r * n, n1, out1.begin() + r * n1);
            if (n2) std::copy_n(y.begin() + r * n + n1, n2, out2.begin() + r * n2);
            if (n3) std::copy_n(y.begin() + r * n + n1 + n2, n3, out3.begin() + r * n3);
        }
    }

private:
    card::CardConfig config_;
    numerics::Scheme scheme_;
    std::uint64_t passes_;
};

} // namespace

std::shared_ptr<const Unit> matvec_unit(const card::CardConfig& config) {
    return std::make_shared<Matvec>(config);
}

} // namespace cardsim::sim::units
