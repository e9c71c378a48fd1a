// The RTL matvec (rtl/matvec.sv, Verilated) against the C++ kernel (and, without bias and
// epilogue, the exact spec of engine/numerics/spec), bit for bit: random shapes, every
// weight format the card packs and every activation knob point, rows with extreme and NaN scales,
// zero rows, activations with subnormals, huge and tiny blocks, NaN and infinities; a tiny hybrid
// model end to end with --rtl matvec; and the test-only broken RTL caught with its command named.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/lower/lower.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/numerics/spec/activation.hpp"
#include "engine/numerics/spec/matvec.hpp"
#include "engine/program/epilogue.hpp"
#include "engine/program/slots.hpp"
#include "sim/card/simulation.hpp"
#include "sim/rtl/rtl_gelu.hpp"
#include "sim/rtl/rtl_matvec.hpp"
#include "sim/units/unit_set.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/skip.hpp"
#include "traces/xxh64.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

using namespace cardsim;

namespace {

/// A card config of one weight format and knob point.
card::CardConfig config_of(std::uint32_t code_bits, card::ScaleKind scale, std::uint32_t group,
                           numerics::ActScaling scaling, numerics::Words words) {
    auto c = card::default_card_config();
    c.weights.code_bits = code_bits;
    c.weights.scale = scale;
    c.weights.block_size = group;
    c.numerics.scaling = scaling;
    c.numerics.activations = words;
    return c;
}

/// A float of random sign and significand at 2^e (subnormal or zero far down, inf far up).
float at_scale(std::mt19937& rng, int e) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    return std::ldexp(g(rng), e);
}

/// Packed weights of `n` x `k` in `config`'s format: most rows quantised from values of a random
/// binade (from 2^-140 to 2^120), some rows all zero, some rows of random bytes (any scale byte:
/// NaN scales, f16 infinities and subnormals, E8M0 exponents far apart within a row; any code byte,
/// -128 and -8 included).
std::vector<std::byte> random_weights(std::mt19937& rng, const card::CardConfig& config, std::size_t n,
                                      std::size_t k) {
    const auto layout = kernels::matrix_layout(config, n, k);
    std::vector<float> values(n * k);
    std::uniform_int_distribution<int> binade(-140, 120), kind(0, 9);
    std::vector<int> kinds(n);
    for (std::size_t r = 0; r < n; ++r) {
        kinds[r] = kind(rng);
        const int e = binade(rng);
        for (std::size_t j = 0; j < k; ++j)
            values[r * k + j] = kinds[r] == 0 ? 0.0f : at_scale(rng, e);
    }
    std::vector<std::byte> bytes(layout.bytes());
    numerics::quantize_into(values, layout, bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (std::size_t r = 0; r < n; ++r)
        if (kinds[r] >= 8) // random scale and code bytes (the padding stays zero)
            for (std::size_t i = 0; i < layout.scale_bytes() + layout.code_bytes(); ++i)
                bytes[r * layout.row_stride() + i] = std::byte(byte(rng));
    return bytes;
}

/// An activation matrix of `rows` x `k`: blocks of 32 at random binades (subnormal to 2^100), zero
/// blocks, and, when `nonfinite`, one NaN or infinity somewhere.
std::vector<float> random_activations(std::mt19937& rng, std::size_t rows, std::size_t k, bool nonfinite) {
    std::vector<float> x(rows * k);
    std::uniform_int_distribution<int> binade(-160, 100), kind(0, 7);
    for (std::size_t b = 0; b * 32 < x.size(); ++b) {
        const int what = kind(rng), e = binade(rng);
        for (std::size_t j = b * 32; j < std::min(x.size(), b * 32 + 32); ++j)
            x[j] = what == 0 ? 0.0f : what == 1 ? -0.0f : at_scale(rng, e);
    }
    if (nonfinite) {
        std::uniform_int_distribution<std::size_t> at(0, x.size() - 1);
        x[at(rng)] = std::bernoulli_distribution(0.5)(rng) ? std::numeric_limits<float>::quiet_NaN()
                                                           : -std::numeric_limits<float>::infinity();
    }
    return x;
}

std::span<std::byte> bytes_of(std::vector<float>& v) {
    return std::as_writable_bytes(std::span<float>(v));
}

/// One matvec command of `rows` token rows over an n x k matrix (operands are the spans given).
program::Command matvec_command(std::size_t rows, std::size_t n, std::size_t k, graph::Epilogue e) {
    program::Command c;
    c.opcode = program::Opcode::Matvec;
    c.unit = card::UnitKind::Matvec;
    c.flags = program::epilogue_flags(e);
    c.dims = {rows, n, k, n, 0};
    c.operands.resize(6);
    return c;
}

} // namespace

TEST_CASE("the RTL matvec is bit-exact with the C++ kernel over random shapes, every weight format and knob "
          "point") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    std::mt19937 rng(15);
    std::size_t outputs = 0, nans = 0, zeros = 0, infs = 0;
    for (std::uint32_t bits : {8u, 4u})
        for (auto scale : {card::ScaleKind::E8M0, card::ScaleKind::F16})
            for (std::uint32_t group : {32u, 64u})
                for (auto scaling : {numerics::ActScaling::Sub32, numerics::ActScaling::PerBlock})
                    for (auto words : {numerics::Words::One, numerics::Words::Two}) {
                        const auto config = config_of(bits, scale, group, scaling, words);
                        const auto unit = sim::rtl::rtl_matvec_unit(config);
                        for (int trial = 0; trial < 6; ++trial) {
                            std::uniform_int_distribution<std::size_t> nd(1, 24), kd(1, 400), rd(1, 2);
                            const std::size_t n = nd(rng), k = kd(rng), rows = rd(rng);
                            const auto e =
                                std::array{graph::Epilogue::None, graph::Epilogue::Relu,
                                           graph::Epilogue::Accumulate, graph::Epilogue::Gelu}[trial % 4];
                            INFO(fmt::format("int{} {} g{} {} {} words, {} x {} x {}, epilogue {}", bits,
                                             scale == card::ScaleKind::F16 ? "f16" : "e8m0", group,
                                             scaling == numerics::ActScaling::Sub32 ? "sub32" : "per_block",
                                             words == numerics::Words::Two ? 2 : 1, rows, n, k, trial));
                            auto w = random_weights(rng, config, n, k);
                            auto x = random_activations(rng, rows, k, trial % 3 == 1 && rows == 2);
                            std::vector<float> bias(n), prior(rows * n);
                            for (auto& v : bias)
                                v = at_scale(rng, std::uniform_int_distribution<int>(-150, 127)(rng));
                            for (auto& v : prior)
                                v = at_scale(rng, std::uniform_int_distribution<int>(-150, 128)(rng));
                            const bool with_bias = trial % 3 != 0;
                            std::vector<float> out = prior, none;
                            const std::array<std::span<std::byte>, 6> ops{
                                bytes_of(x),
                                std::span<std::byte>(w),
                                with_bias ? bytes_of(bias) : bytes_of(none),
                                bytes_of(out),
                                {},
                                {}};
                            const auto c = matvec_command(rows, n, k, e);
                            REQUIRE_NOTHROW(unit->compute(c, ops)); // the unit checks itself too
                            // The C++ kernel, independently.
                            std::vector<float> want = prior;
                            const numerics::MatrixView m(kernels::matrix_layout(config, n, k),
                                                         std::span<const std::byte>(w));
                            kernels::matvec(
                                m, x, kernels::activation_scheme(config.numerics), e,
                                with_bias ? std::span<const float>(bias) : std::span<const float>(), want);
                            for (std::size_t i = 0; i < want.size(); ++i) {
                                INFO("element " << i);
                                REQUIRE(std::bit_cast<std::uint32_t>(out[i]) ==
                                        std::bit_cast<std::uint32_t>(want[i]));
                                nans += std::isnan(out[i]);
                                zeros += out[i] == 0.0f;
                                infs += std::isinf(out[i]);
                            }
                            if (e == graph::Epilogue::None && !with_bias) // and the exact spec, alone
                                for (std::size_t r = 0; r < rows; ++r) {
                                    const auto q = numerics::spec::quantize(
                                        std::span<const float>(x).subspan(r * k, k),
                                        kernels::activation_scheme(config.numerics), group);
                                    const auto spec = numerics::spec::matvec(w, m.layout(), q);
                                    for (std::size_t j = 0; j < n; ++j) {
                                        INFO("spec: token row " << r << ", element " << j);
                                        REQUIRE(std::bit_cast<std::uint32_t>(out[r * n + j]) ==
                                                std::bit_cast<std::uint32_t>(spec[j]));
                                    }
                                }
                            outputs += want.size();
                            CHECK(unit->measured_cycles() >= rows * n); // at least a cycle an output
                        }
                    }
    // The random cases did reach the special results.
    CHECK(outputs > 1000);
    CHECK(nans > 0);
    CHECK(zeros > 0);
    CHECK(infs > 0);
}

TEST_CASE("the RTL matvec's cycles grow with the matrix, a beat of its width a cycle") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    const auto config =
        config_of(8, card::ScaleKind::E8M0, 32, numerics::ActScaling::Sub32, numerics::Words::One);
    const auto unit = sim::rtl::rtl_matvec_unit(config);
    auto cycles = [&](std::size_t n, std::size_t k, graph::Epilogue e = graph::Epilogue::None) {
        std::mt19937 same(static_cast<unsigned>(n * k)); // the same operands for each epilogue
        auto w = random_weights(same, config, n, k);
        auto x = random_activations(same, 1, k, false);
        std::vector<float> out(n), none;
        const std::array<std::span<std::byte>, 6> ops{
            bytes_of(x), std::span<std::byte>(w), bytes_of(none), bytes_of(out), {}, {}};
        unit->compute(matvec_command(1, n, k, e), ops);
        return unit->measured_cycles();
    };
    const std::uint64_t width = sim::rtl::rtl_matvec_width();
    // The weight stream takes n x k / width beats: no fewer cycles. Per output row the slower of the
    // dots (k / width beats) and the window sum (a chunk of 32 a cycle, 4 more for rounding, bias
    // and the result), plus the activation load and the pipeline.
    for (auto [n, k] : {std::pair{64u, 256u}, std::pair{128u, 512u}}) {
        const auto c = cycles(n, k);
        CHECK(c >= n * k / width);
        CHECK(c <= n * std::max<std::uint64_t>(k / width, k / 32 + 4) + k / width + 64);
    }
    // The GELU epilogue is a pipeline of its own: a fixed number of cycles more a command, not a row.
    const auto gelu_small = cycles(64, 256, graph::Epilogue::Gelu) - cycles(64, 256);
    const auto gelu_large = cycles(256, 256, graph::Epilogue::Gelu) - cycles(256, 256);
    CHECK(gelu_small > 0);
    CHECK(gelu_small == gelu_large);
}

TEST_CASE("a tiny hybrid model runs end to end with --rtl matvec, bit-exact, printing the RTL's cycles") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    test::ScratchDir dir("rtl_hybrid");
    auto made = test::run_cardsim(
        fmt::format("make-model --arch hybrid --size tiny --seed 1 -o {}", (dir / "model").string()));
    REQUIRE(made.code == 0);
    for (const char* knob : {"--knob scaling=sub32", "--knob scaling=per_block --knob activations=two"}) {
        auto r = test::run_cardsim(
            fmt::format("run {} --tokens 2 --no-reference --rtl matvec {}", (dir / "model").string(), knob));
        INFO(r.out);
        REQUIRE(r.code == 0);
        CHECK(test::contains(r.out, "bit-exact: yes"));
        CHECK(test::contains(r.out, "rtl Matvec: "));
    }
    auto m = test::run_cardsim(
        fmt::format("run {} --tokens 2 --no-reference --rtl matvec --machine", (dir / "model").string()));
    CHECK(test::contains(m.out, "rtl_cycles_Matvec="));
    CHECK(test::contains(m.out, "model_cycles_Matvec="));
}

TEST_CASE(
    "a broken RTL matvec is caught: the run stops naming the command, the element and both bit patterns") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    const graph::DecoderShape shape{2, 128, 4, 2, 32, 256, 300};
    auto config = card::default_card_config();
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    lower::Options o(graph::Bucket{1, 1, 0}, 4);
    auto c = lower::lower(g, w, lower::target_of(config), o);
    sim::RunPlan plan;
    plan.steps = 1;
    plan.inputs = [](std::size_t, const sim::StepOutputs*) {
        return graph::BatchInputs{{5}, {0}, {}, {}, {}, {}, {}, {}};
    };
    auto units = sim::units::UnitSet::standard(config);
    units.set(sim::rtl::rtl_matvec_unit(config, sim::rtl::RtlVariant::Broken));
    plan.units = units;
    auto r = sim::simulate(config, c, plan);
    REQUIRE(r.fault);
    INFO(*r.fault);
    CHECK(test::contains(*r.fault, "bus error at step 0, command "));
    CHECK(test::contains(*r.fault, "(Matvec)"));
    CHECK(test::contains(*r.fault,
                         "the RTL matvec differs from the C++ kernel at token row 0, output element "));
    CHECK(test::contains(*r.fault, "RTL 0x"));
    CHECK(test::contains(*r.fault, "kernel 0x"));
}

namespace {

/// The RTL's gelu of each pattern against numerics::gelu, bit for bit (the first difference fails
/// the test, naming the input and both results); the count of inputs checked.
std::size_t check_rtl_gelu(const std::vector<std::uint32_t>& in) {
    std::vector<std::uint32_t> out(in.size());
    sim::rtl::rtl_gelu(in, out);
    for (std::size_t i = 0; i < in.size(); ++i) {
        const auto want = std::bit_cast<std::uint32_t>(numerics::gelu(std::bit_cast<float>(in[i])));
        if (out[i] != want)
            FAIL(fmt::format("gelu(0x{:08x}): RTL 0x{:08x}, numerics 0x{:08x}", in[i], out[i], want));
    }
    return in.size();
}

/// Every pattern from `first` for `count` patterns (both signs when `both_signs`).
void run_of(std::vector<std::uint32_t>& v, std::uint32_t first, std::uint32_t count, bool both_signs = true) {
    for (std::uint32_t i = 0; i < count; ++i) {
        v.push_back(first + i);
        if (both_signs) v.push_back((first + i) ^ 0x8000'0000u);
    }
}

/// The f32 pattern of `x`.
std::uint32_t bits(float x) {
    return std::bit_cast<std::uint32_t>(x);
}

} // namespace

TEST_CASE("the RTL GELU equals numerics::gelu bit for bit over edge values and a dense sweep") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    std::vector<std::uint32_t> v = {0x0000'0000u, 0x8000'0000u, 0x7F80'0000u, 0xFF80'0000u, 0x7FC0'0000u,
                                    0xFFC0'0000u, 0x7F80'0001u, 0xFFFF'FFFFu, 0x7F7F'FFFFu, 0xFF7F'FFFFu};
    run_of(v, 0x0000'0001u, 1 << 16);                    // the smallest subnormals (x/2 ties)
    run_of(v, 0x007F'0000u, 1 << 16);                    // the largest subnormals
    run_of(v, bits(0x1p-27f) - (1 << 15), 1 << 16);      // the tiny-argument rule's edge
    run_of(v, bits(8.0f) - (1 << 15), 1 << 16, false);   // x >= 8 gives x
    run_of(v, bits(-16.0f) - (1 << 15), 1 << 16, false); // x <= -16 gives -0
    run_of(v, bits(-14.0f), 1 << 17, false);             // where gelu underflows to subnormals and 0
    for (int k = 0; k <= 192; ++k)                       // every segment boundary of [-16, 8)
        run_of(v, bits(std::fabs(-16.0f + float(k) / 8)) - 64, 128, true);
    for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4093) // every binade, both signs
        v.push_back(std::uint32_t(b));
    CHECK(check_rtl_gelu(v) > 1'500'000);
}

TEST_CASE("the RTL GELU equals numerics::gelu on every f32 input", "[.sweep]") {
    // Not in ctest (about 15 minutes of one core): `build/tests/tests_rtl "[.sweep]"`.
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    std::vector<std::uint32_t> v(1 << 24);
    for (std::uint64_t hi = 0; hi < 256; ++hi) {
        for (std::uint32_t i = 0; i < v.size(); ++i)
            v[i] = std::uint32_t(hi << 24) | i;
        check_rtl_gelu(v);
    }
}

TEST_CASE("a tiny ModernBERT encoder runs end to end with --rtl matvec, bit-exact") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    test::ScratchDir dir("rtl_encoder");
    auto made = test::run_cardsim(
        fmt::format("make-model --arch encoder --size tiny --seed 2 -o {}", (dir / "model").string()));
    INFO(made.out);
    REQUIRE(made.code == 0);
    auto r = test::run_cardsim(fmt::format("run {} --config {}/configs/encoder.toml --no-reference "
                                           "--rtl matvec",
                                           (dir / "model").string(), CARDSIM_SOURCE_DIR));
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(test::contains(r.out, "bit-exact: yes"));
    CHECK(test::contains(r.out, "rtl Matvec: "));
}

TEST_CASE("an encoder whose FFN matvecs take the GELU epilogue runs through the RTL, each result the C++ "
          "kernel's and the run's outputs the C++ units'") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    // The GELU unit enables the matvec's GELU epilogue (configs/encoder.toml has none: no recognised
    // architecture takes the epilogue).
    const std::vector<card::Override> gelu{{"units.gelu.count", "1"}};
    auto config =
        card::load_card_config(std::filesystem::path(CARDSIM_SOURCE_DIR) / "configs/encoder.toml", gelu);
    graph::EncoderShape shape{2, 64, 4, 80, 128, 2, 8}; // qkv 192 wide, wi 160
    auto g = graph::example_encoder(shape);
    // Each layer's input projection Gemm takes the GELU epilogue (the matvec's, not the GeGLU unit's).
    std::size_t gelus = 0;
    for (auto& op : g.ops)
        if (auto* m = std::get_if<graph::Gemm>(&op);
            m && m->epilogue == graph::Epilogue::None && g.shape(m->out).width == 2 * shape.intermediate) {
            m->epilogue = graph::Epilogue::Gelu;
            ++gelus;
        }
    REQUIRE(gelus == shape.layers);
    test::GraphWeights w(g);
    lower::Options o(graph::Bucket{6, 1, 1}, 8);
    auto c = lower::lower(g, w, lower::target_of(config), o);
    std::size_t gelu_commands = 0;
    for (const auto& cmd : c.program.commands)
        gelu_commands +=
            cmd.opcode == program::Opcode::Matvec && program::epilogue_of(cmd.flags) == graph::Epilogue::Gelu;
    REQUIRE(gelu_commands >= shape.layers);
    auto plan_of = [&](bool rtl) {
        sim::RunPlan plan;
        plan.steps = 1;
        plan.inputs = [](std::size_t, const sim::StepOutputs*) {
            return graph::BatchInputs{
                {5, 9, 2, 7, 1, 3}, {0, 1, 2, 3, 4, 5}, {0, 6}, {0}, {5}, {0, 1}, {}, {}};
        };
        if (rtl) {
            auto units = sim::units::UnitSet::standard(config);
            units.set(sim::rtl::rtl_matvec_unit(config));
            plan.units = units;
        }
        return plan;
    };
    // SystemC runs one simulation a process: each in a child, giving back whether it faulted and a
    // digest of every output byte (the RTL unit checks each of its results itself).
    auto run = [&](bool rtl) {
        return test::in_child([&] {
            auto r = sim::simulate(config, c, plan_of(rtl));
            std::vector<std::byte> all;
            for (const auto& step : r.outputs)
                for (const auto& v : step.values)
                    all.insert(all.end(), v.begin(), v.end());
            return std::vector<std::uint64_t>{r.fault ? 1u : 0u, all.size(), traces::xxh64(all)};
        });
    };
    const auto with_rtl = run(true), with_cpp = run(false);
    REQUIRE(with_rtl.size() == 3);
    CHECK(with_rtl[0] == 0); // no bus error: every RTL result was the C++ kernel's
    CHECK(with_rtl[1] > 0);
    CHECK(with_rtl == with_cpp);
}

namespace {

/// The largest per-command error `cardsim calibrate` prints for the config's values (its `config:`
/// line), in per cent.
double config_max_error(const std::string& out) {
    const auto at = out.find("  config: ");
    REQUIRE(at != std::string::npos);
    const auto max = out.find("max ", at);
    REQUIRE(max != std::string::npos);
    return std::stod(out.substr(max + 4));
}

} // namespace

TEST_CASE("after calibrating against an RTL run the model's matvec cycles are within 5 % of the RTL's") {
    if (!sim::rtl::rtl_available()) CARDSIM_SKIP("this build has no Verilator, so no RTL");
    test::ScratchDir dir("rtl_calibrate");
    const auto model = (dir / "model").string(), cal = (dir / "cal.toml").string();
    REQUIRE(
        test::run_cardsim(fmt::format("make-model --arch hybrid --size tiny --seed 1 -o {}", model)).code ==
        0);
    auto run = [&](const std::string& trace, const std::string& config) {
        auto r = test::run_cardsim(
            fmt::format("run {} --tokens 2 --no-reference --rtl matvec --trace {} {}", model, trace, config));
        INFO(r.out);
        REQUIRE(r.code == 0);
        CHECK(test::contains(r.out, "bit-exact: yes"));
    };
    run((dir / "a.trace").string(), "");
    auto first = test::run_cardsim(fmt::format("calibrate {} -o {}", (dir / "a.trace").string(), cal));
    INFO(first.out);
    REQUIRE(first.code == 0);
    CHECK(config_max_error(first.out) > 5.0); // the default card's matvec is not the RTL's
    // A second run on the calibrated card: its model cycles against the RTL's, per command.
    run((dir / "b.trace").string(), "--config " + cal);
    auto second = test::run_cardsim(fmt::format("calibrate {} --config {} -o {}", (dir / "b.trace").string(),
                                                cal, (dir / "again.toml").string()));
    INFO(second.out);
    REQUIRE(second.code == 0);
    CHECK(config_max_error(second.out) <= 5.0);
}
