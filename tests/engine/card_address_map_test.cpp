// The DDR address map: bit-order strings decode bursts onto bank group, bank, row and column.

#include "engine/card/address_map.hpp"
#include "engine/error.hpp"

#include <catch2/catch.hpp>

namespace {

using namespace cardsim::card;

DdrConfig with_map(const char* map) {
    DdrConfig d = default_card_config().ddr;
    d.controller.address_map = map;
    return d;
}

} // namespace

TEST_CASE("the default map rotates consecutive bursts over the bank groups", "[card][address]") {
    const AddressMap m = AddressMap::build(default_card_config().ddr);
    CHECK(m.burst_shift() == 6);
    for (std::uint64_t b = 0; b < 16; ++b) {
        const DramCoord c = m.decode_burst(b);
        CHECK(c.bank_group == b % 4);
        CHECK(c.column == b / 4);
        CHECK(c.bank == 0);
        CHECK(c.row == 0);
    }
    CHECK(m.decode(0x7f) == m.decode_burst(1)); // bytes 64..127 are burst 1
}

TEST_CASE("the default map puts the bank above the columns and the row above the banks", "[card][address]") {
    const AddressMap m = AddressMap::build(default_card_config().ddr);
    // 4 bank groups x 128 columns of bursts = 512 bursts per row of each bank: 32 KiB.
    CHECK(m.decode_burst(511) == DramCoord{3, 0, 0, 127});
    CHECK(m.decode_burst(512) == DramCoord{0, 1, 0, 0});
    CHECK(m.decode_burst(4 * 512) == DramCoord{0, 0, 1, 0});
    CHECK(m.field_bits(DramField::Row) == 16); // 8 GiB / (16 banks x 8 KiB)
    CHECK(m.decode((8ull << 30) - 1) == DramCoord{3, 3, 65535, 127});
}

TEST_CASE("a field split in two takes its low bits at its rightmost place", "[card][address]") {
    const AddressMap m = AddressMap::build(with_map("row:bank:column[4]:bankgroup:column"));
    for (std::uint64_t b = 0; b < 8; ++b)
        CHECK(m.decode_burst(b) == DramCoord{0, 0, 0, static_cast<std::uint32_t>(b)});
    CHECK(m.decode_burst(8) == DramCoord{1, 0, 0, 0});
    CHECK(m.decode_burst(32) == DramCoord{0, 0, 0, 8});
    CHECK(m.decode_burst(32 * 16) == DramCoord{0, 1, 0, 0});
}

TEST_CASE("the repeating run of a map is its low column and bank-group bits", "[card][address]") {
    const AddressMap def = AddressMap::build(default_card_config().ddr);
    CHECK(def.run_bits() == 9);
    CHECK(def.bank_group_period() == 4);
    const AddressMap one_group = AddressMap::build(with_map("row:bank:bankgroup:column"));
    CHECK(one_group.run_bits() == 7);
    CHECK(one_group.bank_group_period() == 1);
    const AddressMap banks_low = AddressMap::build(with_map("row:column:bank:bankgroup"));
    CHECK(banks_low.run_bits() == 2);
}

TEST_CASE("a map with an unknown, missing, repeated or oversized field is refused", "[card][address]") {
    CHECK_THROWS_WITH(AddressMap::build(with_map("row:bank:column:bg")),
                      Catch::Contains("`bg` is not a field"));
    CHECK_THROWS_WITH(AddressMap::build(with_map("row:bank:column")),
                      Catch::Contains("`bankgroup` is given 0 bits"));
    CHECK_THROWS_WITH(AddressMap::build(with_map("row:bank:column:bankgroup:column")),
                      Catch::Contains("`column` appears more than once"));
    CHECK_THROWS_WITH(AddressMap::build(with_map("row:bank:column[8]:bankgroup")),
                      Catch::Contains("`column` is given 8 bits; this geometry has 7"));
    CHECK_THROWS_WITH(AddressMap::build(with_map("row:bank:column[x]:bankgroup")),
                      Catch::Contains("no bit count"));
}
