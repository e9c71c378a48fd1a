#include "engine/card/address_map.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <optional>
#include <vector>

namespace cardsim::card {
namespace {

/// log2 of `v` when it is a power of two, else nothing.
std::optional<std::uint32_t> exact_log2(std::uint64_t v) {
    if (v == 0 || !std::has_single_bit(v)) return std::nullopt;
    return static_cast<std::uint32_t>(std::countr_zero(v));
}

/// One token of the bit-order string: a field and, when given, its bit count.
struct Token {
    DramField field;
    std::optional<std::uint32_t> bits;
};

std::optional<DramField> parse_field(std::string_view s) {
    for (auto f : {DramField::Column, DramField::BankGroup, DramField::Bank, DramField::Row, DramField::Rank})
        if (name(f) == s) return f;
    return std::nullopt;
}

/// Splits "row:bank:column[3]:bankgroup:column" into tokens, most significant first.
std::vector<Token> tokenize(std::string_view text) {
    std::vector<Token> tokens;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(':', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view tok = text.substr(start, end - start);
        std::optional<std::uint32_t> bits;
        if (auto open = tok.find('['); open != std::string_view::npos) {
            if (tok.back() != ']')
                throw Error(fmt::format("`{}` is not a field: expected name or name[bits]", tok));
            std::string_view digits = tok.substr(open + 1, tok.size() - open - 2);
            std::uint32_t n = 0;
            auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
            if (ec != std::errc{} || p != digits.data() + digits.size() || digits.empty())
                throw Error(fmt::format("`{}` has no bit count: expected name[bits]", tok));
            bits = n;
            tok = tok.substr(0, open);
        }
        auto field = parse_field(tok);
        if (!field)
            throw Error(
                fmt::format("`{}` is not a field: expected row, bank, bankgroup, column or rank", tok));
        tokens.push_back({*field, bits});
        start = end + 1;
    }
    return tokens;
}

} // namespace

std::string_view name(DramField field) {
    switch (field) {
    case DramField::Column:
        return "column";
    case DramField::BankGroup:
        return "bankgroup";
    case DramField::Bank:
        return "bank";
    case DramField::Row:
        return "row";
    case DramField::Rank:
        return "rank";
    }
    return "?";
}

AddressMap AddressMap::build(const DdrConfig& ddr) {
    AddressMap map;
    const std::uint64_t burst = ddr.burst_bytes();
    auto burst_shift = exact_log2(burst);
    if (!burst_shift) throw Error(fmt::format("the burst of {} bytes is not a power of two", burst));
    map.burst_shift_ = *burst_shift;
    const auto& g = ddr.geometry;
    auto column = g.row_bytes >= burst ? exact_log2(g.row_bytes / burst) : std::nullopt;
    if (!column || g.row_bytes % burst != 0)
        throw Error(fmt::format("a row of {} bytes is not a power-of-two number of {}-byte bursts",
                                g.row_bytes, burst));
    auto bg = exact_log2(g.bank_groups);
    auto bank = exact_log2(g.banks_per_group);
    if (!bg || !bank) throw Error("bank groups and banks per group must be powers of two");
    auto rank = exact_log2(g.ranks);
    if (!rank) throw Error("the number of ranks must be a power of two");
    const std::uint64_t bank_bytes = std::uint64_t{g.row_bytes} * g.channel_banks();
    auto row =
        ddr.channel_bytes() % bank_bytes == 0 ? exact_log2(ddr.channel_bytes() / bank_bytes) : std::nullopt;
    if (!row)
        throw Error(
            fmt::format("a channel of {} MiB over {} banks of {}-byte rows is not a power-of-two number "
                        "of rows per bank",
                        ddr.capacity_mib, g.channel_banks(), g.row_bytes));
    map.field_bits_ = {*column, *bg, *bank, *row, *rank};

    std::vector<Token> tokens = tokenize(ddr.controller.address_map);
    const bool has_rank =
        std::any_of(tokens.begin(), tokens.end(), [](const Token& t) { return t.field == DramField::Rank; });
    if (!has_rank) tokens.insert(tokens.begin(), Token{DramField::Rank, std::nullopt});
    // Resolve bare fields: each field may have one token without a bit count, taking the rest.
    std::array<std::uint32_t, 5> given{};
    std::array<int, 5> bare{};
    for (auto& t : tokens) {
        auto i = static_cast<std::size_t>(t.field);
        if (t.bits)
            given[i] += *t.bits;
        else
            ++bare[i];
    }
    for (std::size_t i = 0; i < 5; ++i) {
        auto f = static_cast<DramField>(i);
        if (bare[i] > 1) throw Error(fmt::format("`{}` appears more than once without a bit count", name(f)));
        if (given[i] > map.field_bits_[i] || (bare[i] == 0 && given[i] != map.field_bits_[i]))
            throw Error(fmt::format("`{}` is given {} bits; this geometry has {}", name(f), given[i],
                                    map.field_bits_[i]));
    }
    // Assign address bits from the least significant token up; each field's low bits come first.
    std::array<std::uint32_t, 5> filled{};
    std::uint32_t shift = 0;
    for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
        auto i = static_cast<std::size_t>(it->field);
        std::uint32_t bits = it->bits ? *it->bits : map.field_bits_[i] - given[i];
        if (bits == 0) continue;
        if (map.piece_count_ == map.pieces_.size())
            throw Error(fmt::format("more than {} pieces", map.pieces_.size()));
        map.pieces_[map.piece_count_++] = {it->field, static_cast<std::uint8_t>(shift),
                                           static_cast<std::uint8_t>(filled[i]),
                                           static_cast<std::uint8_t>(bits)};
        filled[i] += bits;
        shift += bits;
    }
    // The low run of column / bank-group bits, and the bank-group period inside it: of the
    // prefixes of that run, the one with the most periods per block (blocks / period).
    std::uint32_t top_bg = 0;
    std::uint32_t bits = 0;
    std::uint32_t best = 0;
    for (auto& p : map.pieces()) {
        if (p.field == DramField::Row || p.field == DramField::Bank || p.field == DramField::Rank) break;
        bits += p.bits;
        if (p.field == DramField::BankGroup) top_bg = p.source_shift + p.bits;
        if (bits - top_bg > best || map.run_bits_ == 0) {
            best = bits - top_bg;
            map.run_bits_ = bits;
            map.bank_group_period_ = 1u << top_bg;
        }
    }
    return map;
}

} // namespace cardsim::card
