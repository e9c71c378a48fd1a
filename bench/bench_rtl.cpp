// Host time per simulated matvec: the RTL co-simulation (Verilated rtl/matvec.sv, driven clock by
// clock, each result also checked against the C++ kernel) against the C++ matvec unit, on one token
// row of random int8 E8M0/32 weights at the default knob point. Counters: the RTL's cycles a matvec
// and the simulated MACs per host second. Without Verilator the RTL cases report an error.

#include "engine/card/card_config.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/program/program.hpp"
#include "sim/rtl/rtl_matvec.hpp"
#include "sim/units/kinds.hpp"

#include <benchmark/benchmark.h>

#include <array>
#include <random>
#include <vector>

using namespace cardsim;

namespace {

/// A matvec of one token row over an n x k matrix of random weights, and its operands.
struct Case {
    program::Command command;
    std::vector<float> x, out;
    std::vector<std::byte> w;
    std::vector<float> none;
    std::array<std::span<std::byte>, 6> operands() {
        return {std::as_writable_bytes(std::span<float>(x)),
                std::span<std::byte>(w),
                std::as_writable_bytes(std::span<float>(none)),
                std::as_writable_bytes(std::span<float>(out)),
                {},
                {}};
    }
};

Case make_case(const card::CardConfig& config, std::size_t n, std::size_t k) {
    Case c;
    c.command.opcode = program::Opcode::Matvec;
    c.command.unit = card::UnitKind::Matvec;
    c.command.dims = {1, n, k, n, 0};
    c.command.operands.resize(6);
    std::mt19937 rng(1);
    std::normal_distribution<float> g;
    std::vector<float> values(n * k);
    for (auto& v : values)
        v = g(rng);
    const auto layout = kernels::matrix_layout(config, n, k);
    c.w.resize(layout.bytes());
    numerics::quantize_into(values, layout, c.w);
    c.x.resize(k);
    for (auto& v : c.x)
        v = g(rng);
    c.out.resize(n);
    return c;
}

void run(benchmark::State& state, bool rtl) {
    const auto config = card::default_card_config();
    const std::size_t n = std::size_t(state.range(0)), k = std::size_t(state.range(1));
    if (rtl && !sim::rtl::rtl_available()) {
        state.SkipWithError("this build has no Verilator");
        return;
    }
    const auto unit = rtl ? sim::rtl::rtl_matvec_unit(config) : sim::units::matvec_unit(config);
    auto c = make_case(config, n, k);
    auto ops = c.operands();
    for (auto _ : state) {
        unit->compute(c.command, ops);
        benchmark::DoNotOptimize(c.out.data());
    }
    state.counters["rtl_cycles"] = double(unit->measured_cycles());
    state.counters["MACs/s"] =
        benchmark::Counter(double(n * k) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_matvec_cpp_unit(benchmark::State& state) {
    run(state, false);
}
void BM_matvec_rtl_cosim(benchmark::State& state) {
    run(state, true);
}

BENCHMARK(BM_matvec_cpp_unit)
    ->Args({256, 256})
    ->Args({1024, 1024})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matvec_rtl_cosim)
    ->Args({256, 256})
    ->Args({1024, 1024})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMillisecond);

} // namespace
