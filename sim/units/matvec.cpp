// The matvec unit: streams a packed checkpoint matrix from DDR and multiplies each activation row
// by it (block-integer dots, exact sums rounded to f32 once), then the bias and the epilogue; a
// merged matvec splits each row's outputs over up to three values.
//
// It also runs a Moe op's expert matvecs (ExpertMatvec), resolving the router's indices itself: it
// reads the chosen experts (on chip), then the chosen experts' entries of the layer's expert table
// (DDR, 8 bytes each), then, `units.router.resolve_latency` cycles after an entry arrives, streams
// that expert's matrix: each expert chosen by any row of the step once, however many rows chose it.

#include "engine/error.hpp"
#include "engine/kernels/experts.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/program/epilogue.hpp"
#include "sim/units/kinds.hpp"
#include "sim/units/packed.hpp"
#include "sim/units/unit_of.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace cardsim::sim::units {
namespace {

class Matvec final : public UnitOf<program::slots::Matvec, program::slots::ExpertMatvec> {
    using S = program::slots::Matvec;       ///< the command slots of a matvec
    using X = program::slots::ExpertMatvec; ///< and of an expert matvec

public:
    explicit Matvec(const card::CardConfig& config)
        : UnitOf(card::UnitKind::Matvec), config_(config),
          scheme_(kernels::activation_scheme(config.numerics)),
          passes_(config.numerics.activations == numerics::Words::Two ? 2 : 1) {}

    /// MACs: rows · n · k (an expert matvec: n · k for each slot choosing one of this card's
    /// experts, rows · top_k of them on one card), once per activation word (the
    /// second word, the residual of the first, takes a second pass through the lanes).
    std::uint64_t work(const program::Command& c, const Step& step) const override {
        if (c.opcode == X::opcode) { // the slots whose expert this card holds
            auto d = program::args<X>(c).dims;
            return local_slots(d, step) * d.n * d.k * passes_;
        }
        auto d = program::args<S>(c).dims;
        return d.rows * d.n * d.k * passes_;
    }

    /// An expert matvec moves the chosen experts' table entries and matrices only, each once.
    std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const override {
        if (c.opcode != X::opcode) return Unit::traffic(c, k, step);
        using O = X::Operand;
        const bool bias = k == program::at(O::bias);
        if (k != program::at(O::table) && k != program::at(O::experts) && !bias)
            return Unit::traffic(c, k, step);
        auto d = program::args<X>(c).dims;
        const auto chosen = distinct(d, step);
        const std::uint64_t matrix = kernels::matrix_layout(config_, d.n, d.k).bytes();
        std::vector<Span> spans;
        for (auto e : chosen) // this card's experts, each from its place in the card's table
            spans.push_back(bias                         ? Span{4 * d.n * (e - d.first), 4 * d.n}
                            : k == program::at(O::table) ? Span{8 * (e - d.first), 8}
                                                         : Span{(e - d.first) * d.stride, matrix});
        return spans;
    }

    /// An expert matvec's table reads wait for the chosen indices, its streams for the table.
    std::optional<IssueAfter> issue_after(const program::Command& c, std::size_t k) const override {
        if (c.opcode != X::opcode) return std::nullopt;
        using O = X::Operand;
        if (k == program::at(O::table) || k == program::at(O::bias))
            return IssueAfter{program::at(O::choice), 0};
        if (k == program::at(O::experts))
            return IssueAfter{program::at(O::table), config_.units.router.resolve_latency};
        return std::nullopt;
    }

    void compute(const program::Command& c, Operands operands) const override {
        if (c.opcode == X::opcode) return experts(c, operands);
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        auto w = packed_matrix(config_, o.w, d.n, d.k);
        if (c.flags & program::flag::Partial) { // a tensor-parallel card's exact parts
            kernels::matvec_partial(w, f32s(o.x), scheme_, o.out);
            return;
        }
        auto epilogue = program::epilogue_of(c.flags);
        if (d.n1 == d.n) {
            kernels::matvec(w, f32s(o.x), scheme_, epilogue, f32s(o.b), f32s(o.out));
            return;
        }
        std::vector<float> y(d.rows * d.n);
        kernels::matvec(w, f32s(o.x), scheme_, epilogue, f32s(o.b), y);
        split(y, d.rows, d.n, d.n1, d.n2, f32s(o.out), f32s(o.out2), f32s(o.out3));
    }

private:
    /// Rows of `n` outputs in `y` into `out1` (n1 each), `out2` (n2) and `out3` (the rest).
    static void split(const std::vector<float>& y, std::size_t rows, std::size_t n, std::size_t n1,
                      std::size_t n2, std::span<float> out1, std::span<float> out2, std::span<float> out3) {
        const std::size_t n3 = n - n1 - n2;
        for (std::size_t r = 0; r < rows; ++r) {
            std::copy_n(y.begin() + r * n, n1, out1.begin() + r * n1);
            if (n2) std::copy_n(y.begin() + r * n + n1, n2, out2.begin() + r * n2);
            if (n3) std::copy_n(y.begin() + r * n + n1 + n2, n3, out3.begin() + r * n3);
        }
    }

    /// The step's routing of router `d.router`: every slot's chosen expert.
    static const std::vector<std::uint32_t>& routing(const X::Dims& d, const Step& step) {
        if (d.router >= step.routing.size() || step.routing[d.router].size() != d.rows * d.top_k)
            throw Error(fmt::format("the step has no routing of router {} for {} rows of {} experts (a "
                                    "timing-only run takes a routing model: run --routing)",
                                    d.router, d.rows, d.top_k));
        for (auto e : step.routing[d.router])
            if (e >= d.routed)
                throw Error(fmt::format("router {} chose expert {} of {}", d.router, e, d.routed));
        return step.routing[d.router];
    }

    /// Whether expert `e` is one of this card's.
    static bool mine(const X::Dims& d, std::uint64_t e) { return e >= d.first && e - d.first < d.experts; }

    /// The experts of this card the step's routing chose for router `d.router`, each once, in
    /// index order.
    static std::set<std::uint64_t> distinct(const X::Dims& d, const Step& step) {
        std::set<std::uint64_t> out;
        for (auto e : routing(d, step))
            if (mine(d, e)) out.insert(e);
        return out;
    }

    /// The slots choosing one of this card's experts: all of them on one card; without a routing
    /// (a command timed outside a step), every slot.
    static std::uint64_t local_slots(const X::Dims& d, const Step& step) {
        if (d.first == 0 && d.experts == d.routed) return d.rows * d.top_k;
        std::uint64_t n = 0;
        for (auto e : routing(d, step))
            n += mine(d, e);
        return n;
    }

    void experts(const program::Command& c, Operands operands) const {
        auto d = program::args<X>(c).dims;
        auto o = program::each<X>(operands);
        const auto layout = kernels::matrix_layout(config_, d.n, d.k);
        std::vector<std::uint64_t> table(d.experts);
        std::memcpy(table.data(), o.table.data(), std::min<std::size_t>(o.table.size(), 8 * table.size()));
        auto matrix_of = [&](std::uint32_t e) {
            if (!mine(d, e))
                throw Error(fmt::format("router {} chose expert {}, not one of this card's {} .. {} of {}",
                                        d.router, e, d.first, d.first + d.experts, d.routed));
            const auto entry = table[e - d.first];
            if (entry > o.experts.size() || layout.bytes() > o.experts.size() - entry)
                throw Error(fmt::format("expert {}'s table entry {:#x} points past the experts' {} bytes", e,
                                        entry, o.experts.size()));
            return numerics::MatrixView(layout, o.experts.subspan(entry, layout.bytes()), "an expert matrix");
        };
        for (auto e : u32s(o.choice))
            if (e >= d.routed)
                throw Error(fmt::format("router {} chose expert {} of {}", d.router, e, d.routed));
        const kernels::ExpertRange range{std::uint32_t(d.first), std::uint32_t(d.experts)};
        const std::size_t slots = d.rows * d.top_k;
        if (d.n1 == d.n) {
            kernels::expert_matvec(matrix_of, f32s(o.x), u32s(o.choice), d.top_k, d.per_slot != 0, scheme_,
                                   f32s(o.out), range, f32s(o.bias));
            return;
        }
        std::vector<float> y(slots * d.n);
        kernels::expert_matvec(matrix_of, f32s(o.x), u32s(o.choice), d.top_k, d.per_slot != 0, scheme_, y,
                               range, f32s(o.bias));
        split(y, slots, d.n, d.n1, d.n - d.n1, f32s(o.out), f32s(o.out2), {});
    }

    card::CardConfig config_;
    numerics::Scheme scheme_;
    std::uint64_t passes_;
};

} // namespace

std::shared_ptr<const Unit> matvec_unit(const card::CardConfig& config) {
    return std::make_shared<Matvec>(config);
}

} // namespace cardsim::sim::units
