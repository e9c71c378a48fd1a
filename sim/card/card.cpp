#include "sim/card/card.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace cardsim::sim {
namespace {

/// The DDR bytes from address 0 that `p`'s regions span: all the data a run of it can touch.
std::uint64_t ddr_span(const program::Program& p) {
    std::uint64_t end = 0;
    for (auto& r : p.regions)
        if (r.space == program::Space::Ddr && r.base + r.size >= r.base) end = std::max(end, r.base + r.size);
    return end;
}

} // namespace

Card::Card(const sc_core::sc_module_name& name, const card::CardConfig& config,
           const program::Program& program, const program::Image& image, Mode mode, units::UnitSet units)
    : sc_core::sc_module(name), context_(config, program, mode == Mode::TimingOnly, std::move(units)),
      ddr_("ddr", config.ddr, ddr_span(program)), sram_("sram", config.sram, config.clock.kernel_mhz),
      sram_port_("sram_port") {
    context_.channel_active.assign(config.ddr.channels, 0);
    for (auto& r : program.regions) {
        auto& at = context_.regions[static_cast<std::size_t>(r.kind)];
        at = RegionAt{r.space, r.base, r.size, true};
        if (r.space == program::Space::Ddr && (r.base > ddr_.size() || r.size > ddr_.size() - r.base))
            throw Error(fmt::format(
                "the program's {} region ({:#x} + {} bytes) does not fit the card's {} bytes of DDR",
                program::name(r.kind), r.base, r.size, ddr_.size()));
        if (r.space == program::Space::Sram)
            sram_.store().require(r.base + r.size,
                                  fmt::format("the program's {} region", program::name(r.kind)));
    }
    // A timing-only run moves no data: its DDR stays empty (the io region still gets the host's inputs).
    if (mode == Mode::Full)
        for (auto& chunk : image.chunks) {
            auto& w = context_.region(program::Region::Weights);
            ddr_.load(w.base + chunk.address, chunk.bytes);
        }
    sram_port_.sram.bind(sram_.socket);
    std::vector<UnitModule*> plain;
    for (auto kind : card::all_unit_kinds) {
        auto& spec = config.units[kind];
        for (std::uint32_t i = 0; i < spec.count; ++i) {
            auto unit = std::make_unique<UnitModule>(fmt::format("{}_{}", card::name(kind), i).c_str(), kind,
                                                     i, spec, context_);
            unit->ddr.bind(ddr_.socket);
            unit->sram.bind(sram_port_.units);
            plain.push_back(unit.get());
            units_.push_back(std::move(unit));
        }
    }
    processor_ = std::make_unique<CommandProcessor>("command_processor", context_, std::move(plain));
    processor_->ddr.bind(ddr_.socket);
}

void Card::write(program::Region r, std::uint64_t offset, std::span<const std::byte> bytes) {
    auto& at = context_.region(r);
    if (!at.present || offset > at.size || bytes.size() > at.size - offset)
        throw Error(fmt::format("host write of {} bytes at {}+{:#x} lies outside the region", bytes.size(),
                                program::name(r), offset));
    if (at.space == program::Space::Ddr)
        ddr_.load(at.base + offset, bytes);
    else
        sram_.store().write(at.base + offset, bytes);
}

void Card::read(program::Region r, std::uint64_t offset, std::span<std::byte> bytes) const {
    auto& at = context_.region(r);
    if (!at.present || offset > at.size || bytes.size() > at.size - offset)
        throw Error(fmt::format("host read of {} bytes at {}+{:#x} lies outside the region", bytes.size(),
                                program::name(r), offset));
    if (at.space == program::Space::Ddr)
        ddr_.peek(at.base + offset, bytes);
    else
        sram_.store().read(at.base + offset, bytes);
}

void Card::use_program(const program::Program& p) {
    for (auto& r : p.regions) {
        auto& at = context_.region(r.kind);
        if (!at.present || at.space != r.space || at.base != r.base || at.size != r.size)
            throw Error(
                fmt::format("a bucket's {} region ({:#x} + {} bytes) is not the loaded program's ({:#x} + "
                            "{} bytes): the buckets of a set share one region table",
                            program::name(r.kind), r.base, r.size, at.base, at.size));
    }
    std::size_t present = 0;
    for (auto& at : context_.regions)
        present += at.present;
    if (present != p.regions.size())
        throw Error("a bucket has fewer regions than the loaded program: the buckets of a set share one "
                    "region table");
    context_.program = &p;
}

bool Card::run_step(std::uint32_t step, std::vector<std::uint32_t> positions) {
    context_.step = step;
    context_.positions = std::move(positions);
    return processor_->run_step();
}

} // namespace cardsim::sim
