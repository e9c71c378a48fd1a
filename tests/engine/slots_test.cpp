// Commands by named slots: a slot filled by name is read back by the same name from the index the
// opcode table gives it, a command read as another opcode is refused, and every opcode's table row
// is its slot struct's.

#include "engine/program/slots.hpp"

#include <catch2/catch.hpp>

using namespace cardsim;
using namespace cardsim::program;

TEST_CASE("a slot filled by name sits at the index the opcode table names it by") {
    Command c;
    Operand w{Region::Weights, Access::Write, 64, 128}; // a wrong access: the slot's wins
    fill<slots::Matvec>(c, {.w = w}, {.rows = 1, .n = 2, .k = 3, .n1 = 4, .n2 = 5});
    auto& s = spec(Opcode::Matvec);
    REQUIRE(c.operands.size() == s.operands.size());
    REQUIRE(c.dims.size() == s.dims.size());
    for (std::size_t i = 0; i < s.dims.size(); ++i)
        CHECK(c.dims[i] == i + 1); // rows, n, k, n1, n2 in the table's order
    CHECK(s.dims[at(slots::Matvec::Dim::n1)] == "n1");
    CHECK(s.operands[at(slots::Matvec::Operand::w)].name == "w");
    CHECK(c.operands[at(slots::Matvec::Operand::w)].offset == 64);
    CHECK(c.operands[at(slots::Matvec::Operand::w)].access == Access::Read);
    CHECK(c.operands[at(slots::Matvec::Operand::x)].region == Region::None); // absent
    auto a = args<slots::Matvec>(c);
    CHECK(a.dims.n1 == 4);
    CHECK(a.operands.w == c.operands[1]);
}

TEST_CASE("parameters are stored as their kind says and read back by name") {
    Command c;
    fill<slots::Attend>(c, {}, {.window = 7}, {.scale = 0.125, .softcap = 30.0});
    CHECK(c.params == std::vector<std::uint64_t>{f64_bits(0.125), f64_bits(30.0)});
    auto a = args<slots::Attend>(c);
    CHECK(a.params.softcap == 30.0);
    CHECK(a.dims.window == 7);
    CHECK(spec(Opcode::Attend).params[at(slots::Attend::Param::softcap)].name == "softcap");
}

TEST_CASE("a command read as another opcode's slots is refused") {
    Command c;
    fill<slots::Add>(c, {}, {.rows = 1, .width = 8});
    CHECK_THROWS_WITH(args<slots::Matvec>(c), Catch::Contains("read as Matvec is a Add"));
    c.dims.pop_back();
    CHECK_THROWS(args<slots::Add>(c));
}

TEST_CASE("every opcode's table row is its slot struct's: name, counts and slot names in order") {
    for (std::uint16_t raw = 0; raw < opcode_count; ++raw) {
        auto op = *opcode_from(raw);
        with_slots(op, [&](auto s) {
            using S = decltype(s);
            auto& row = spec(op);
            INFO(row.name);
            CHECK(S::opcode == op);
            CHECK(S::name == row.name);
            REQUIRE(row.operands.size() == S::operand_count);
            REQUIRE(row.dims.size() == S::dim_count);
            REQUIRE(row.params.size() == S::param_count);
            for (std::size_t i = 0; i < S::operand_count; ++i)
                CHECK(row.operands[i].name == S::operand_slots[i].name);
            for (std::size_t i = 0; i < S::dim_count; ++i)
                CHECK(row.dims[i] == S::dim_slots[i]);
            return 0;
        });
    }
}
