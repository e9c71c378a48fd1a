// The unit kinds behind the card's timing loop: every opcode has the unit kind the opcode table
// names, a registration replaces one kind's implementation, and the matvec unit computes a Gemm as
// graph::Gemm documents it, `epilogue(x wᵀ + b)`.

#include "engine/card/card_config.hpp"
#include "engine/kernels/formats.hpp"
#include "engine/kernels/kernels.hpp"
#include "engine/numerics/functions.hpp"
#include "engine/program/epilogue.hpp"
#include "engine/program/slots.hpp"
#include "sim/units/unit_set.hpp"

#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <random>

using namespace cardsim;
namespace slots = program::slots;
namespace units = sim::units;

namespace {

/// Bytes of `v` (f32), and back.
std::vector<std::byte> bytes_of(const std::vector<float>& v) {
    std::vector<std::byte> b(4 * v.size());
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}
std::vector<float> floats_of(const std::vector<std::byte>& b) {
    std::vector<float> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
}

/// A matvec of `rows` rows of `k` through an `n × k` matrix on the default card, with a bias and
/// the given epilogue, run by the card's matvec unit; `out` holds what the output held before.
struct MatvecCase {
    card::CardConfig config = card::default_card_config();
    std::size_t rows = 2, n = 48, k = 64;
    std::vector<float> x, w, b;
    std::vector<std::byte> packed;

    MatvecCase() {
        std::mt19937_64 rng(11);
        std::normal_distribution<float> dist(0, 1);
        x.resize(rows * k);
        w.resize(n * k);
        b.resize(n);
        for (auto* v : {&x, &w, &b})
            for (auto& e : *v)
                e = dist(rng);
        auto layout = kernels::matrix_layout(config, n, k);
        packed.resize(layout.bytes());
        numerics::quantize_into(w, layout, packed);
    }

    /// The unit's result for `epilogue`, the output starting as `out`.
    std::vector<float> card(graph::Epilogue epilogue, std::vector<float> out) const {
        program::Command c;
        c.unit = card::UnitKind::Matvec;
        c.flags = program::epilogue_flags(epilogue);
        program::Operand some{program::Region::Arena, program::Access::Read, 0, 4};
        program::fill<slots::Matvec>(c, {.x = some, .w = some, .b = some, .out = some},
                                     {.rows = rows, .n = n, .k = k, .n1 = n, .n2 = 0});
        auto xb = bytes_of(x), bb = bytes_of(b), ob = bytes_of(out);
        auto wb = packed;
        std::vector<std::span<std::byte>> operands(slots::Matvec::operand_count);
        operands[program::at(slots::Matvec::Operand::x)] = xb;
        operands[program::at(slots::Matvec::Operand::w)] = wb;
        operands[program::at(slots::Matvec::Operand::b)] = bb;
        operands[program::at(slots::Matvec::Operand::out)] = ob;
        units::UnitSet::standard(config)[card::UnitKind::Matvec].compute(c, operands);
        return floats_of(ob);
    }

    /// `x wᵀ` as the exact matvec rounds it, without bias or epilogue.
    std::vector<float> product() const {
        std::vector<float> y(rows * n);
        auto layout = kernels::matrix_layout(config, n, k);
        numerics::MatrixView view(layout, packed, "the test matrix");
        kernels::matvec(view, x, kernels::activation_scheme(config.numerics), graph::Epilogue::None, {}, y);
        return y;
    }
};

} // namespace

TEST_CASE("every opcode is run by the unit kind the opcode table names, and by no other") {
    auto set = units::UnitSet::standard(card::default_card_config());
    for (std::uint16_t raw = 0; raw < program::opcode_count; ++raw) {
        auto op = *program::opcode_from(raw);
        INFO(program::name(op));
        CHECK(set[program::spec(op).unit].runs(op));
        for (auto kind : card::all_unit_kinds)
            if (kind != program::spec(op).unit) CHECK_FALSE(set[kind].runs(op));
    }
}

TEST_CASE("registering a unit replaces its kind's implementation and no other") {
    auto config = card::default_card_config();
    auto set = units::UnitSet::standard(config);
    auto before = set.shared(card::UnitKind::Add);
    auto other = units::UnitSet::standard(config).shared(card::UnitKind::Matvec);
    set.set(other);
    CHECK(set.shared(card::UnitKind::Matvec) == other);
    CHECK(set.shared(card::UnitKind::Add) == before);
    CHECK_THROWS_WITH(set.set(nullptr), Catch::Contains("no implementation"));
}

TEST_CASE("a matvec with a bias and a GELU epilogue computes gelu(x wT + b), as graph::Gemm documents") {
    MatvecCase m;
    auto y = m.product();
    auto got = m.card(graph::Epilogue::Gelu, std::vector<float>(m.rows * m.n, 0.0f));
    std::size_t order_matters = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const float biased = y[i] + m.b[i % m.n];
        INFO("element " << i);
        REQUIRE(std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(numerics::gelu(biased)));
        if (std::bit_cast<std::uint32_t>(numerics::gelu(y[i]) + m.b[i % m.n]) !=
            std::bit_cast<std::uint32_t>(got[i]))
            ++order_matters;
    }
    CHECK(order_matters > got.size() / 2); // the bias after the GELU would have differed
}

TEST_CASE("a matvec with a bias that accumulates adds x wT + b to what its output held") {
    MatvecCase m;
    auto y = m.product();
    std::vector<float> before(m.rows * m.n);
    for (std::size_t i = 0; i < before.size(); ++i)
        before[i] = 0.25f * float(i % 7) - 0.5f;
    auto got = m.card(graph::Epilogue::Accumulate, before);
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i);
        REQUIRE(std::bit_cast<std::uint32_t>(got[i]) ==
                std::bit_cast<std::uint32_t>(before[i] + (y[i] + m.b[i % m.n])));
    }
}
