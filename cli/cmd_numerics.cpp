// `cardsim numerics`: the numerics contract of a knob point (or of every point), and the
// exhaustive check of the correctly rounded functions against their reference.

#include "cli/command.hpp"
#include "engine/error.hpp"
#include "engine/numerics/contract.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/spec/functions.hpp"

#include <fmt/core.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;
using namespace cardsim::numerics;

/// Every `stride`-th f32 pattern through `f` and its reference on `threads` threads; prints the
/// result and returns the number of inputs whose bits differ.
std::uint64_t sweep(Function f, std::uint64_t stride, unsigned threads) {
    const auto start = std::chrono::steady_clock::now();
    std::atomic<std::uint64_t> wrong{0}, checked{0};
    std::mutex print;
    std::vector<std::jthread> pool; // joined on the way out, also when starting one fails
    const unsigned long long hard_before = spec::reference_hard_cases();
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            std::uint64_t mine = 0, bad = 0;
            for (std::uint64_t u = t * stride; u < (1ull << 32); u += threads * stride) {
                const float x = std::bit_cast<float>(static_cast<std::uint32_t>(u));
                const float got = apply(f, x), want = spec::reference(f, x);
                ++mine;
                if (std::bit_cast<std::uint32_t>(got) != std::bit_cast<std::uint32_t>(want)) {
                    if (++bad <= 5) {
                        std::lock_guard lock(print);
                        fmt::print("  {}(0x{:08x} = {:g}) = 0x{:08x}, reference 0x{:08x}\n", name(f), u, x,
                                   std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want));
                    }
                }
            }
            wrong += bad;
            checked += mine;
        });
    for (auto& t : pool)
        t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("{:<9} {:>11} inputs  {:>4} not correctly rounded  {:>6} reference hard cases  {:.1f} s\n",
               name(f), checked.load(), wrong.load(), spec::reference_hard_cases() - hard_before, seconds);
    return wrong.load();
}

int run_numerics(std::span<const std::string> args) {
    po::options_description options("options");
    options.add_options()("knob", po::value<std::vector<std::string>>()->composing(),
                          "set a numerics knob: scaling=sub32|per_block, activations=one|two, state=f32|f16, "
                          "cache=f16|int8|int8_hadamard, attention=vector|array (repeatable)")(
        "all", "print the contract of every knob point")(
        "sweep", po::value<std::string>(),
        "check FUNCTION (exp, sigmoid, silu, softplus, rsqrt, sin, cos, gelu, or all) against its "
        "reference on every f32 input; exit 1 if any result is not correctly rounded")(
        "stride", po::value<std::uint64_t>()->default_value(1),
        "with --sweep: check every N-th f32 pattern only")(
        "threads", po::value<unsigned>()->default_value(std::max(1u, std::thread::hardware_concurrency())),
        "with --sweep: threads to use");
    auto vm = parse("numerics", "[--knob key=value ...] [--all] [--sweep FUNCTION]", args, options);
    // Three modes (--sweep, --all, the contract of the --knob point): an option the mode asked for does
    // not use is refused, naming it, never ignored.
    if (vm.count("sweep")) {
        if (given(vm, "all"))
            throw Error("cardsim numerics --sweep: --all does nothing there: the sweep checks the functions "
                        "against their reference, and --all prints the contracts (give one of them)");
        if (given(vm, "knob"))
            throw Error("cardsim numerics --sweep: --knob does nothing there: the functions are checked "
                        "whatever the knob point (drop --knob, or drop --sweep to print the contract of the "
                        "point)");
    } else {
        for (const char* n : {"stride", "threads"})
            if (given(vm, n))
                throw Error(
                    fmt::format("cardsim numerics: --{} does nothing without --sweep: it sets how the "
                                "sweep checks the functions, and no sweep is asked for (drop --{}, "
                                "or give --sweep FUNCTION)",
                                n, n));
        if (given(vm, "all") && given(vm, "knob"))
            throw Error(
                "cardsim numerics --all: --knob does nothing there: --all prints the contract of every "
                "knob point (drop --knob, or drop --all to print the contract of the point it names)");
    }
    if (vm.count("sweep")) {
        const std::string which = vm["sweep"].as<std::string>();
        const std::uint64_t stride = vm["stride"].as<std::uint64_t>();
        const unsigned threads = std::max(1u, vm["threads"].as<unsigned>());
        if (stride == 0) throw Error("cardsim numerics --stride: expected a positive number of patterns");
        // No step wraps: a stride past the 2^32 patterns would visit the first alone.
        if (stride > (1ull << 32))
            throw Error(fmt::format("cardsim numerics --stride {}: expected at most 2^32 (the f32 patterns)",
                                    stride));
        std::uint64_t wrong = 0;
        bool found = false;
        for (Function f : all_functions)
            if (which == "all" || which == name(f)) {
                found = true;
                wrong += sweep(f, stride, threads);
            }
        if (!found)
            throw Error("cardsim numerics --sweep `" + which +
                        "`: expected exp, sigmoid, silu, softplus, rsqrt, sin, cos, gelu or all");
        return wrong == 0 ? Ok : Negative;
    }
    if (vm.count("all")) {
        for (const EngineNumerics& p : all_points())
            fmt::print("{}\n", to_string(contract(p)));
        return Ok;
    }
    std::vector<std::string> knobs;
    if (vm.count("knob")) knobs = vm["knob"].as<std::vector<std::string>>();
    fmt::print("{}", to_string(contract(parse_point(knobs, "cardsim numerics --knob"))));
    return Ok;
}

Register registered_numerics{
    {"numerics", "print the numerics contract of a knob point; check the nonlinear functions", run_numerics}};

} // namespace
} // namespace cardsim::cli
