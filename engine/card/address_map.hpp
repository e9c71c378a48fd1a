#pragma once
// How a channel-local byte address maps onto rank, bank group, bank, row and column of a DDR channel.

#include "engine/card/card_config.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cardsim::card {

/// A field of a DRAM address.
enum class DramField : std::uint8_t { Column, BankGroup, Bank, Row, Rank };

/// Where one burst lives in a channel.
struct DramCoord {
    std::uint32_t bank_group = 0;
    std::uint32_t bank = 0; ///< within its bank group
    std::uint32_t row = 0;
    std::uint32_t column = 0; ///< in bursts within the row
    std::uint32_t rank = 0;
    friend bool operator==(const DramCoord&, const DramCoord&) = default;
};

/// A channel's address mapping, built from the config's bit-order string (e.g.
/// "row:bank:column:bankgroup", most significant field first; `field[N]` takes N bits). Addresses
/// are decoded per burst: the low log2(burst bytes) bits are the offset inside the burst. With
/// more than one rank and no `rank` field in the string, the rank bits are the most significant
/// (each rank holds a contiguous part of the channel).
class AddressMap {
public:
    /// One contiguous run of address bits that feeds one field.
    struct Piece {
        DramField field;
        std::uint8_t source_shift; ///< first bit, counted in bursts (above the burst offset)
        std::uint8_t field_shift;  ///< where those bits go in the field's value
        std::uint8_t bits;
    };

    /// Builds the map of `ddr`'s controller. An unknown field, a field given too many or too few
    /// bits, or a geometry that does not give power-of-two fields is a cardsim::Error saying what
    /// was expected (the caller adds where the key was set).
    static AddressMap build(const DdrConfig& ddr);

    /// The coordinate of burst number `burst` (a channel-local byte address >> burst_shift()).
    DramCoord decode_burst(std::uint64_t burst) const {
        std::array<std::uint32_t, 5> f{};
        for (std::uint32_t i = 0; i < piece_count_; ++i) {
            const Piece& p = pieces_[i];
            f[static_cast<std::size_t>(p.field)] |=
                static_cast<std::uint32_t>((burst >> p.source_shift) & ((std::uint64_t{1} << p.bits) - 1))
                << p.field_shift;
        }
        return {f[1], f[2], f[3], f[0], f[4]};
    }
    /// The coordinate of the burst holding channel-local byte `address`.
    DramCoord decode(std::uint64_t address) const { return decode_burst(address >> burst_shift_); }

    /// log2 of the burst size in bytes.
    std::uint32_t burst_shift() const { return burst_shift_; }
    /// Low address bits above the burst offset that go to column or bank group only: an aligned
    /// block of 2^run_bits() bursts stays in one row of one bank per bank group. (Of the possible
    /// blocks, the one holding the most bank-group periods.)
    std::uint32_t run_bits() const { return run_bits_; }
    /// Bursts after which the bank-group sequence inside such a block repeats (a power of two).
    std::uint32_t bank_group_period() const { return bank_group_period_; }
    /// The pieces, least significant first.
    std::span<const Piece> pieces() const { return {pieces_.data(), piece_count_}; }
    /// Bits of each field (column, bank group, bank, row, rank).
    std::uint32_t field_bits(DramField field) const { return field_bits_[static_cast<std::size_t>(field)]; }

private:
    std::array<Piece, 16> pieces_{};
    std::uint32_t piece_count_ = 0;
    std::uint32_t burst_shift_ = 0;
    std::uint32_t run_bits_ = 0;
    std::uint32_t bank_group_period_ = 1;
    std::array<std::uint32_t, 5> field_bits_{};
};

/// The spelling of a field in the bit-order string (`column`, `bankgroup`, `bank`, `row`, `rank`).
std::string_view name(DramField field);

} // namespace cardsim::card
