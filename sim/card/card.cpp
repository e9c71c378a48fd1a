#include "sim/card/card.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>

namespace cardsim::sim {
namespace {

/// The DDR bytes from address 0 that the programs' regions span: all the data a run can touch.
std::uint64_t ddr_span(std::span<const program::Program* const> programs) {
    std::uint64_t end = 0;
    for (auto* p : programs)
        for (auto& r : p->regions)
            if (r.space == program::Space::Ddr && r.base + r.size >= r.base)
                end = std::max(end, r.base + r.size);
    return end;
}

/// The first program of a set, which must have one.
const program::Program& first_of(std::span<const program::Program* const> programs) {
    if (programs.empty()) throw Error("a card needs at least one program");
    return *programs.front();
}

} // namespace

Card::Card(const sc_core::sc_module_name& name, const card::CardConfig& config,
           const program::Program& program, const program::Image& image, Mode mode, units::UnitSet units)
    : Card(name, config, std::span<const program::Program* const>(std::array{&program}), image, mode,
           std::move(units)) {}

Card::Card(const sc_core::sc_module_name& name, const card::CardConfig& config,
           std::span<const program::Program* const> programs, const program::Image& image, Mode mode,
           units::UnitSet units)
    : sc_core::sc_module(name), programs_(programs.begin(), programs.end()),
      context_(config, first_of(programs), mode == Mode::TimingOnly, std::move(units)),
      ddr_("ddr", config.ddr, ddr_span(programs)), sram_("sram", config.sram, config.clock.kernel_mhz),
      sram_port_("sram_port") {
    for (auto* p : programs_)
        for (auto& r : p->regions) {
            if (r.space == program::Space::Ddr && (r.base > ddr_.size() || r.size > ddr_.size() - r.base))
                throw Error(fmt::format(
                    "the program's {} region ({:#x} + {} bytes) does not fit the card's {} bytes of DDR",
                    program::name(r.kind), r.base, r.size, ddr_.size()));
            if (r.space == program::Space::Sram)
                sram_.store().require(r.base + r.size,
                                      fmt::format("the program's {} region", program::name(r.kind)));
        }
    ddr_.set_user_port(memory::user_port_lane(config.ddr, config.clock.kernel_mhz));
    use(0);
    // A timing-only run moves no data: its DDR stays empty (the io region still gets the host's inputs).
    if (mode == Mode::Full) load(image);
    sram_port_.sram.bind(sram_.socket);
    std::vector<UnitModule*> plain;
    std::vector<card::UnitKind> kinds(card::all_unit_kinds.begin(), card::all_unit_kinds.end());
    kinds.push_back(card::UnitKind::Network); // present only on a card of a system (sim/system)
    for (auto kind : kinds) {
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

void Card::load(const program::Image& image) {
    const auto& w = context_.region(program::Region::Weights);
    // Chunks that are ranges of one image memory, each as far from its address as the first (a
    // mirror of the weights region: the memory lowering packed into, or an image file mapped), are
    // lent to the DDR: it reads them in place until something writes there, so a run holds the
    // weights once. The bytes between the chunks are zero there as they are in DDR.
    const auto* head = image.chunks.empty() ? nullptr : &image.chunks.front();
    const program::ImageMemory* memory = head ? head->bytes.memory() : nullptr;
    const std::int64_t shift = head ? std::int64_t(head->bytes.offset()) - std::int64_t(head->address) : 0;
    for (auto& chunk : image.chunks)
        if (chunk.bytes.memory() != memory ||
            std::int64_t(chunk.bytes.offset()) - std::int64_t(chunk.address) != shift)
            memory = nullptr;
    if (memory && !ddr_.lending()) {
        const auto& last = image.chunks.back();
        const std::uint64_t span = last.address + last.bytes.size() - head->address;
        if (w.base + head->address <= ddr_.data_size() && span <= ddr_.data_size() - w.base - head->address) {
            ddr_.lend(w.base + head->address, memory->bytes().subspan(head->bytes.offset(), span),
                      head->bytes.shared_memory());
            return;
        }
    }
    // Otherwise the pages the chunks cover are committed in one call first: loading takes no page
    // faults.
    std::uint64_t first = ~std::uint64_t{0}, end = 0;
    for (auto& chunk : image.chunks) {
        first = std::min(first, chunk.address);
        end = std::max(end, chunk.address + chunk.bytes.size());
    }
    if (end > first) ddr_.prepare(w.base + first, end - first);
    for (auto& chunk : image.chunks)
        ddr_.load(w.base + chunk.address, chunk.bytes);
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

void Card::use(std::size_t k) {
    if (k >= programs_.size())
        throw Error(fmt::format("bucket {} of a card holding {} programs", k, programs_.size()));
    context_.program = programs_[k];
    context_.regions = {};
    for (auto& r : programs_[k]->regions)
        context_.regions[static_cast<std::size_t>(r.kind)] = RegionAt{r.space, r.base, r.size, true};
}

bool Card::run_step(std::uint32_t step, std::vector<std::uint32_t> positions) {
    return run_step(step, std::move(positions), {});
}

bool Card::run_step(std::uint32_t step, std::vector<std::uint32_t> positions,
                    std::vector<std::uint32_t> slots) {
    context_.step = step;
    context_.positions = std::move(positions);
    context_.slots = std::move(slots);
    return processor_->run_step();
}

} // namespace cardsim::sim
