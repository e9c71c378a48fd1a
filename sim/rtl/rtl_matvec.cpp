// The RTL matvec unit: each Matvec command's token rows quantised with the C++ numerics (the
// activation quantiser is the previous unit's job on the card; the RTL takes codes and exponents),
// streamed through the Verilated rtl/matvec.sv, and every result held to the C++ kernel bit for bit.

#include "sim/rtl/rtl_matvec.hpp"

#include "engine/error.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/numerics/activation.hpp"
#include "engine/program/epilogue.hpp"
// Verilator's headers are not warning-clean under -Wextra.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "sim/rtl/matvec_driver.hpp"
#include <Vmatvec.h>
#include <Vmatvec_broken.h>
#include <verilated_config.h>
#pragma GCC diagnostic pop
#include "sim/units/kinds.hpp"
#include "sim/units/packed.hpp"
#include "sim/units/unit_of.hpp"

#include <algorithm>
#include <bit>
#include <mutex>
#include <type_traits>
#include <variant>

namespace cardsim::sim::rtl {
namespace {

/// The RTL's epilogue code of `e`.
RtlEpilogue rtl_epilogue(graph::Epilogue e) {
    switch (e) {
    case graph::Epilogue::None:
        return RtlEpilogue::None;
    case graph::Epilogue::Relu:
        return RtlEpilogue::Relu;
    case graph::Epilogue::Accumulate:
        return RtlEpilogue::Accumulate;
    case graph::Epilogue::Gelu:
        return RtlEpilogue::Gelu;
    }
    throw Error(fmt::format("matvec: epilogue code {} is not one the RTL matvec knows", int(e)));
}

/// The matvec kind run through the RTL: the C++ model's work and traffic, the RTL's results (held to
/// the C++ kernel) and cycles. Unlike the C++ units it holds state, the Verilated model and the last
/// command's cycles, behind a mutex: one command at a time.
class RtlMatvec final : public units::UnitOf<program::slots::Matvec> {
    using S = program::slots::Matvec; ///< the command slots this unit reads

public:
    RtlMatvec(const card::CardConfig& config, RtlVariant variant)
        : UnitOf(card::UnitKind::Matvec), config_(config), model_(units::matvec_unit(config)),
          scheme_(kernels::activation_scheme(config.numerics)) {
        if (variant == RtlVariant::Broken)
            driver_.template emplace<MatvecDriver<Vmatvec_broken>>(CARDSIM_RTL_WIDTH, CARDSIM_RTL_MAX_CHUNKS);
        else
            driver_.template emplace<MatvecDriver<Vmatvec>>(CARDSIM_RTL_WIDTH, CARDSIM_RTL_MAX_CHUNKS);
    }

    std::uint64_t work(const program::Command& c, const units::Step& step) const override {
        return model_->work(c, step);
    }
    std::vector<units::Span> traffic(const program::Command& c, std::size_t k,
                                     const units::Step& step) const override {
        return model_->traffic(c, k, step);
    }

    void compute(const program::Command& c, units::Operands operands) const override {
        const std::lock_guard lock(mutex_);
        last_cycles_ = 0;
        auto d = program::args<S>(c).dims;
        auto o = program::each<S>(operands);
        auto w = units::packed_matrix(config_, o.w, d.n, d.k);
        const auto epilogue = program::epilogue_of(c.flags);
        const RtlEpilogue rtl = rtl_epilogue(epilogue);
        const std::size_t n = d.n, k = d.k, rows = d.rows;
        const bool merged = d.n1 != d.n;
        auto x = units::f32s(o.x);
        auto bias = units::f32s(o.b);
        if (x.size() < rows * k || units::f32s(o.out).size() < (merged ? 0 : rows * n) ||
            (!bias.empty() && bias.size() < n))
            throw Error(
                fmt::format("matvec: operands too small for {} rows of {} x {} (x {}, out {}, bias {} "
                            "values)",
                            rows, n, k, x.size(), units::f32s(o.out).size(), bias.size()));
        x = x.first(rows * k);
        if (!bias.empty()) bias = bias.first(n);
        // The C++ kernel's results (a merged matvec accumulates into zeros, as the C++ unit does).
        std::vector<float> want(rows * n, 0.0f);
        if (!merged) std::copy_n(units::f32s(o.out).begin(), rows * n, want.begin());
        const std::vector<float> prior = want;
        kernels::matvec(w, x, scheme_, epilogue, bias, want);
        std::vector<float> got(rows * n);
        for (std::size_t r = 0; r < rows; ++r) {
            const auto q = numerics::quantize(x.subspan(r * k, k), scheme_, w.layout().format.group);
            const auto result = std::visit(
                [&](auto& driver) -> RtlRowResult {
                    if constexpr (std::is_same_v<std::decay_t<decltype(driver)>, std::monostate>)
                        throw Error("the RTL matvec has no model");
                    else
                        return driver.run(w, q, rtl, bias, std::span<const float>(prior).subspan(r * n, n));
                },
                driver_);
            last_cycles_ += result.cycles;
            for (std::size_t j = 0; j < n; ++j) {
                const auto rb = std::bit_cast<std::uint32_t>(result.y[j]);
                const auto kb = std::bit_cast<std::uint32_t>(want[r * n + j]);
                if (rb != kb)
                    throw Error(
                        fmt::format("the RTL matvec differs from the C++ kernel at token row {}, output "
                                    "element {} of {}: RTL 0x{:08x}, kernel 0x{:08x}",
                                    r, j, n, rb, kb));
                got[r * n + j] = result.y[j];
            }
        }
        if (!merged) {
            std::copy(got.begin(), got.end(), units::f32s(o.out).begin());
            return;
        }
        auto out1 = units::f32s(o.out), out2 = units::f32s(o.out2), out3 = units::f32s(o.out3);
        const std::size_t n1 = d.n1, n2 = d.n2, n3 = n - n1 - n2;
        for (std::size_t r = 0; r < rows; ++r) {
            std::copy_n(got.begin() + r * n, n1, out1.begin() + r * n1);
            if (n2) std::copy_n(got.begin() + r * n + n1, n2, out2.begin() + r * n2);
            if (n3) std::copy_n(got.begin() + r * n + n1 + n2, n3, out3.begin() + r * n3);
        }
    }

    std::uint64_t measured_cycles() const override {
        const std::lock_guard lock(mutex_);
        return last_cycles_;
    }

private:
    card::CardConfig config_;
    std::shared_ptr<const units::Unit> model_;
    numerics::Scheme scheme_;
    // The Verilated model is stateful: the co-simulation runs one command at a time.
    mutable std::mutex mutex_;
    mutable std::variant<std::monostate, MatvecDriver<Vmatvec>, MatvecDriver<Vmatvec_broken>> driver_;
    mutable std::uint64_t last_cycles_ = 0;
};

} // namespace

bool rtl_available() {
    return true;
}

std::string_view rtl_verilator_version() {
    return VERILATOR_VERSION;
}

std::uint32_t rtl_matvec_width() {
    return CARDSIM_RTL_WIDTH;
}

std::shared_ptr<const units::Unit> rtl_matvec_unit(const card::CardConfig& config, RtlVariant variant) {
    return std::make_shared<RtlMatvec>(config, variant);
}

} // namespace cardsim::sim::rtl
